import t from 'tap'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
// @ts-expect-error: the bench is plain JavaScript, without types
import { loadSaved, readmeSection, resultsPage, withSection, takeNewest, answer, START, END } from '../../bench/report.mjs'
// @ts-expect-error: the bench is plain JavaScript, without types
import { QUESTIONS } from '../../bench/questions.mjs'

const repo = (path: string) => new URL(`../../${path}`, import.meta.url)

// The README's benchmark figures are written by `npm run bench report` from
// the committed runs in bench/saved/, never by hand: a figure edited in the
// README, or a saved run replaced without the report, fails here.
t.test('the README benchmark section and bench/RESULTS.md are what the report writes from bench/saved/', async t => {
  const saved = loadSaved()
  t.ok(saved.size > 0, 'runs are saved')
  const readme = readFileSync(repo('README.md'), 'utf8')
  t.equal(withSection(readme, readmeSection(saved)), readme, 'README.md: run `npm run bench report`')
  t.equal(readFileSync(repo('bench/RESULTS.md'), 'utf8'), resultsPage(saved), 'bench/RESULTS.md: run `npm run bench report`')
  t.equal(readme.split(START).length, 2, 'one section')
  t.notMatch(readme.slice(readme.indexOf(START), readme.indexOf(END)), /20\d\d-\d\d-\d\d/, 'no dated rows in the README')
})

t.test('every question belongs to a scenario the runner has', async t => {
  for (const q of QUESTIONS) t.ok(existsSync(repo(`bench/scenarios/${q.scenario}.mjs`)), `${q.scenario}: ${q.question}`)
})

const run = (over: object = {}) => ({
  scenario: 's',
  startedAt: '2026-12-01T00:00:00.000Z',
  headline: 'scenario s — GET /x, 50 connections',
  machine: { gitCommit: 'abc', nproc: 2, cpuModel: 'cpu' },
  figures: [
    { panel: 'throughput', unit: 'req/s', group: 'gateway', series: 'req/s', value: 900 },
    { panel: 'throughput', unit: 'req/s', group: 'base', series: 'req/s', value: 1000, baseline: true }
  ],
  ...over
})

t.test('a question is answered from its run: ratio to the first baseline, the target, and why a verdict is weak', async t => {
  const q = { scenario: 's', question: 'q', gateway: { group: 'gateway', series: 'req/s' }, baselines: [{ name: 'bare', group: 'base', series: 'req/s' }], target: { text: '≥ 0.8×', ok: ({ ratio }: { ratio: number }) => ratio >= 0.8 } }
  t.same(answer(q, run()), ['s', 'q', '900 req/s', 'bare: 1,000 req/s', '0.90×', '≥ 0.8×', '**yes**'])
  t.equal(answer({ ...q, target: { ...q.target, ok: () => false } }, run()).at(-1), 'no')
  t.equal(answer(q, run({ notQuiet: { worstOthersCpu: 0.5, labels: ['gateway'] } })).at(-1), '**yes** (busy machine)')
  t.equal(answer(q, run({ figures: [] }))[2], 'not in the saved run')
  t.equal(answer(q, undefined)[2], 'no saved run')
})

t.test('the report takes a newer run from bench/results/ with its chart, and keeps a saved run that is newer', async t => {
  const dir = t.testdir({ results: {}, saved: {}, charts: {} })
  const results = join(dir, 'results')
  const savedDir = join(dir, 'saved')
  const chartsDir = join(dir, 'charts')
  writeFileSync(join(savedDir, 's.json'), JSON.stringify(run()))
  writeFileSync(join(savedDir, 'old.json'), JSON.stringify(run({ scenario: 'old', startedAt: '2026-12-05T00:00:00.000Z' })))
  const newer = run({ startedAt: '2026-12-02T00:00:00.000Z', results: [{ label: 'gateway', othersCpu: 0.4 }], profiles: [{ big: true }], settings: { busyThreshold: 0.1 } })
  writeFileSync(join(results, 's-2026-12-02.json'), JSON.stringify(newer))
  writeFileSync(join(results, 's-2026-12-02.svg'), '<svg/>')
  writeFileSync(join(results, 'old-2026-12-03.json'), JSON.stringify(run({ scenario: 'old', startedAt: '2026-12-03T00:00:00.000Z' })))
  mkdirSync(join(results, 'history'))
  t.same(takeNewest(results, { savedDir, chartsDir }), ['s'])
  const s = loadSaved(savedDir).get('s')
  t.equal(s.startedAt, '2026-12-02T00:00:00.000Z')
  t.same(s.notQuiet, { worstOthersCpu: 0.4, labels: ['gateway'] }, 'a busy machine is kept from the rows')
  t.notOk('results' in s || 'profiles' in s, 'rows and profiles stay in bench/results/')
  t.equal(readFileSync(join(chartsDir, 's.svg'), 'utf8'), '<svg/>')
  t.equal(loadSaved(savedDir).get('old').startedAt, '2026-12-05T00:00:00.000Z')
})

t.test('the README must hold the markers', async t => {
  t.throws(() => withSection('# no markers\n', 'x'), /bench-report:start/)
})
