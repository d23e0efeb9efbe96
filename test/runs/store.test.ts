import t from 'tap'
import { openState } from '../../src/storage/index.js'
import { RunStore } from '../../src/runs/store.js'
import type { RunRecord } from '../../src/runs/index.js'

const record = (id: string, status: RunRecord['status'], endedAt: string | null): RunRecord => ({
  run_id: id, tenant_id: 't', mode: 'echo', message: 'm', status, created_at: '2026-01-01T00:00:00Z', started_at: null, ended_at: endedAt, result: null, error: null, last_event_id: 1
})

t.test('retention removes terminal runs that ended before the cutoff, with their events, and nothing else', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const store = new RunStore(state)
  await store.append(record('old', 'succeeded', '2026-01-01T00:00:00Z'), { id: 1, event: 'run.succeeded', data: {} })
  await store.append(record('recent', 'failed', '2026-06-01T00:00:00Z'), { id: 1, event: 'run.failed', data: {} })
  await store.append(record('running', 'running', null), { id: 1, event: 'run.running', data: {} })
  t.equal(await store.removeEndedBefore(Date.parse('2026-03-01T00:00:00Z')), 1)
  t.equal(store.get('old'), undefined)
  t.same([...store.eventsAfter('old')], [], 'its events went with it')
  t.ok(store.get('recent'))
  t.ok(store.get('running'), 'a run in flight is never removed')
  t.same([...store.inFlight()].map(r => r.run_id), ['running'])
})
