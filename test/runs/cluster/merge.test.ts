import t from 'tap'
import { mergePages } from '../../../src/runs/cluster/merge.js'
import type { RunRecord } from '../../../src/runs/index.js'

const run = (id: string): RunRecord => ({ run_id: id } as RunRecord)
const ids = (runs: RunRecord[]): string[] => runs.map(r => r.run_id)

t.test('owners with nothing more below: the newest `limit` of all, cursor at the last', async t => {
  const merged = mergePages([{ runs: [run('r9'), run('r5')], next: null }, { runs: [run('r8'), run('r2')], next: null }], 3)
  t.same(ids(merged.runs), ['r9', 'r8', 'r5'])
  t.equal(merged.next, 'r5')
  t.same(mergePages([{ runs: [run('r9')], next: null }, { runs: [], next: null }], 3), { runs: [run('r9')], next: null }, 'all fit: no cursor')
})

t.test('an owner that stopped early bounds the page: nothing below where it stopped is taken as complete', async t => {
  // Owner B looked down to r6 only (its scan budget); owner A's r3 may have runs of B above it that B has not read yet.
  const merged = mergePages([{ runs: [run('r9'), run('r3')], next: null }, { runs: [run('r7')], next: 'r6' }], 5)
  t.same(ids(merged.runs), ['r9', 'r7'])
  t.equal(merged.next, 'r6', 'the next page resumes below where B stopped')
  const exact = mergePages([{ runs: [run('r6')], next: 'r6' }, { runs: [run('r9')], next: null }], 5)
  t.same(ids(exact.runs), ['r9', 'r6'], 'the run at the point itself was read by its owner, and is kept')
})
