import t from 'tap'
import { openState } from '../../src/state/index.js'
import { LIFECYCLE_EVENT } from '../../src/runs/catalogue.js'
import { encodeEvent, eventOwner } from '../../src/runs/events.js'
import { RunStore } from '../../src/runs/store.js'
import type { RunEvent, RunRecord } from '../../src/runs/index.js'

const record = (id: string, status: RunRecord['status'], endedAt: string | null, lastEventId = 1): RunRecord => ({
  run_id: id, tenant_id: 't', mode: 'echo', message: 'm', status, created_at: '2026-01-01T00:00:00Z', started_at: null, ended_at: endedAt, result: null, answer: null, artifacts: [], conversation_id: null, error: null, last_event_id: lastEventId
})
const at = '2026-01-01T00:00:00.000Z'
function transition (r: RunRecord): RunEvent {
  const json = JSON.stringify(r)
  const e = encodeEvent(eventOwner(r.run_id, r.tenant_id), r.last_event_id, LIFECYCLE_EVENT[r.status], r.status, `{"status":"${r.status}","run":${json}}`, at)
  e.record = json
  return e
}
const step = (run: string, id: number) => encodeEvent(eventOwner(run, 't'), id, 'echo.step', 'step', JSON.stringify({ step: id }), at)
const stored = (e: RunEvent) => ({ id: e.id, type: e.type, json: e.json })

function open (t: { testdir: () => string, teardown: (fn: () => unknown) => void }) {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  return { state, store: new RunStore(state) }
}

t.test('events are stored as their JSON text and replayed as encoded, after an id, in slices', async t => {
  const { state, store } = open(t)
  const events = [transition(record('r', 'queued', null, 1)), transition(record('r', 'running', null, 2)), step('r', 3), step('r', 4)]
  for (const e of events) await store.append('r', e)
  const raw = state.openDB<string, [string, number]>({ name: 'run-events-v3', encoding: 'string' })
  t.same([...raw.getRange({ start: ['r', 0], end: ['r', Number.MAX_SAFE_INTEGER] })].map(({ value }) => value), events.map(e => e.json))
  t.same([...store.eventsAfter('r')], events.map(stored))
  t.same([...store.eventsAfter('r', 2)], events.slice(2).map(stored), 'after an id')
  t.same([...store.eventsAfter('r', 1, 2)], events.slice(1, 3).map(stored), 'at most a limit')
  t.same(store.logEnd('r'), { id: 4, terminal: false })
  t.same(store.logEnd('nothing'), { id: 0, terminal: false })
  await store.append('r', transition(record('r', 'cancelled', at, 5)))
  t.same(store.logEnd('r'), { id: 5, terminal: true }, 'a cancel ends the log with run.failed')
})

t.test('steps do not rewrite the record; its last_event_id is read from the event log', async t => {
  const { state, store } = open(t)
  await store.append('r', transition(record('r', 'queued', null, 1)))
  await store.append('r', transition(record('r', 'running', null, 2)))
  const raw = state.openDB<string, string>({ name: 'runs-v3', encoding: 'string' })
  const afterTransition = raw.get('r')
  t.equal(afterTransition, JSON.stringify(record('r', 'running', null, 2)), 'the record as of the lifecycle event')
  await store.append('r', step('r', 3))
  await store.append('r', step('r', 4))
  t.equal(raw.get('r'), afterTransition, 'the stored record is the one of the last transition')
  t.match(store.get('r'), { status: 'running', last_event_id: 4 })
  t.same([...store.inFlight()].map(r => [r.run_id, r.last_event_id]), [['r', 4]])
  await store.append('r', transition(record('r', 'succeeded', '2026-01-01T00:00:01Z', 5)))
  t.match(store.get('r'), { status: 'succeeded', last_event_id: 5 })
  t.same([...store.inFlight()], [])
})

t.test('appends of several runs share commits, are written in call order and resolve in order', async t => {
  const { state, store } = open(t)
  const txnId = () => (state.getStats() as { lastTxnId: number }).lastTxnId
  const firstTxn = txnId()
  const resolved: string[] = []
  const writes: Array<Promise<boolean>> = []
  for (let id = 1; id <= 50; id++) {
    for (const run of ['a', 'b']) {
      const e = id === 1 ? transition(record(run, 'queued', null, 1)) : step(run, id)
      writes.push(store.append(run, e).then(ok => { resolved.push(`${run}${id}`); return ok }))
    }
    if (id % 10 === 0) await new Promise(resolve => setImmediate(resolve))
  }
  t.same(await Promise.all(writes), Array(100).fill(true))
  t.ok(txnId() - firstTxn <= 10, `100 appends in 5 event turns took ${txnId() - firstTxn} commits`)
  t.same(resolved, Array.from({ length: 50 }, (_, i) => [`a${i + 1}`, `b${i + 1}`]).flat())
  for (const run of ['a', 'b']) t.same([...store.eventsAfter(run)].map(e => e.id), Array.from({ length: 50 }, (_, i) => i + 1))
})

t.test('run ids from a bound, in id order', async t => {
  const { store } = open(t)
  for (const id of ['run-b', 'run-a', 'run-c']) await store.append(id, transition(record(id, 'queued', null)))
  t.same([...store.runIdsFrom('run-b')], ['run-b', 'run-c'])
})

t.test('retention removes terminal runs that ended before the cutoff, with their events, and nothing else', async t => {
  const { store } = open(t)
  await store.append('old', transition(record('old', 'succeeded', '2026-01-01T00:00:00Z')))
  await store.append('unpublished', transition(record('unpublished', 'succeeded', '2026-01-01T00:00:00Z')))
  await store.append('recent', transition(record('recent', 'failed', '2026-06-01T00:00:00Z')))
  await store.append('running', transition(record('running', 'running', null)))
  t.equal(await store.removeEndedBefore(Date.parse('2026-03-01T00:00:00Z'), id => id === 'unpublished'), 1)
  t.equal(store.get('old'), undefined)
  t.same([...store.eventsAfter('old')], [], 'its events went with it')
  t.ok(store.get('unpublished'), 'a run the relay still holds is kept')
  t.ok(store.get('recent'))
  t.ok(store.get('running'), 'a run in flight is never removed')
  t.same([...store.inFlight()].map(r => r.run_id), ['running'])
})
