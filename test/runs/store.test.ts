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
  await store.append('r', transition(record('r', 'succeeded', '2026-01-01T00:00:01Z', 5)))
  t.match(store.get('r'), { status: 'succeeded', last_event_id: 5 })
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
})

t.test('retention stopped by its signal ends between slices: a slice begun is finished, none is begun after', async t => {
  const { store } = open(t)
  const ended = '2026-01-01T00:00:00Z'
  await Promise.all(Array.from({ length: 2500 }, (_, i) => store.append(`r${i}`, transition(record(`r${i}`, 'succeeded', ended)))))
  const stop = new AbortController()
  const removing = store.removeEndedBefore(Date.parse('2026-03-01T00:00:00Z'), undefined, stop.signal)
  stop.abort()
  t.equal(await removing, 2000, 'the first slice, begun before the stop')
  t.equal(Array.from({ length: 2500 }, (_, i) => store.get(`r${i}`)).filter(r => r !== undefined).length, 500, 'the rest is left for the next sweep')
})

t.test('retention reads only the end index: a run that ends is indexed by its end, with its tenant', async t => {
  const { state, store } = open(t)
  await store.append('a', transition(record('a', 'queued', null, 1)))
  await store.append('a', transition(record('a', 'succeeded', '2026-01-01T00:00:00Z', 2)))
  const ends = state.openDB<string, [number, string]>({ name: 'runs-by-end-v1', encoding: 'string' })
  t.same([...ends.getRange()].map(({ key, value }) => [key, value]), [[[Date.parse('2026-01-01T00:00:00Z'), 'a'], 't']])
  const tenants = state.openDB<string, [string, string]>({ name: 'runs-by-tenant-v1', encoding: 'string' })
  t.same([...tenants.getKeys()], [['t', 'a']], 'the tenant index has the run from its first event')
  t.equal(await store.removeEndedBefore(Date.parse('2026-02-01T00:00:00Z')), 1)
  t.same([...ends.getKeys()], [], 'its entries go with it')
  t.same([...tenants.getKeys()], [])
})

t.test('in a cluster: runs in flight and runs by partition, and a stretch of the log stored with its offset, once', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const store = new RunStore(state, { partitionOf: id => id === 'p1' ? 1 : 0 })
  const logged = [
    { runId: 'p1', event: transition(record('p1', 'queued', null, 1)) },
    { runId: 'p1', event: transition(record('p1', 'running', null, 2)) }
  ]
  t.same(await store.appendLogged(1, 40, logged), logged)
  await store.appendLogged(0, 10, [{ runId: 'p0', event: transition(record('p0', 'queued', null, 1)) }])
  t.equal(store.partitionOffset(1), 40)
  t.equal(store.partitionOffset(2), 0, 'a partition never read is at 0')
  t.same([...store.inFlightOf(1)], ['p1'])
  t.same([...store.inFlightOf(0)], ['p0'])
  t.same(await store.appendLogged(1, 41, [...logged, { runId: 'p1', event: step('p1', 4) }]), [], 'a repeat is skipped, and so is an event past a gap')
  t.equal(store.partitionOffset(1), 41, 'the offset moves all the same')
  await store.appendLogged(1, 45, [{ runId: 'p1', event: step('p1', 3) }, { runId: 'p1', event: transition(record('p1', 'failed', at, 4)) }, { runId: 'p1', event: step('p1', 5) }])
  t.same([...store.eventsAfter('p1')].map(e => e.id), [1, 2, 3, 4], 'nothing after the end')
  t.same([...store.inFlightOf(1)], [], 'an ended run is no longer in flight')
  t.equal(await store.dropPartition(1), 1, 'a partition given up is forgotten')
  t.equal(store.get('p1'), undefined)
  t.equal(store.partitionOffset(1), 0, 'and read again from the start if taken up again')
  t.ok(store.get('p0'), 'another partition is untouched')
  await store.holdPartition(0, 'worker-2')
  t.same(store.partitions(), [{ partition: 0, holder: 'worker-2' }])
  t.equal(await store.dropPartition(0, true), 0, 'a partition a process of this DATA_DIR serves is not dropped by the cleanup')
  t.ok(store.get('p0'))
  await store.holdPartition(0, undefined, 'someone-else')
  t.same(store.partitions(), [{ partition: 0, holder: 'worker-2' }], 'only its holder gives it up')
  await store.holdPartition(0, undefined, 'worker-2')
  t.equal(await store.dropPartition(0, true), 1)
  t.same(store.partitions(), [])
})

t.test('indexes of runs stored before they existed are built once', async t => {
  const { state, store } = open(t)
  await store.append('a', transition(record('a', 'queued', null, 1)))
  await store.append('a', transition(record('a', 'succeeded', '2026-01-01T00:00:00Z', 2)))
  await store.append('b', transition(record('b', 'running', null, 1)))
  for (const name of ['runs-by-tenant-v1', 'runs-by-end-v1', 'run-store-meta']) await state.openDB({ name }).drop()
  const again = new RunStore(state)
  t.equal(await again.buildIndexes(), 2)
  t.equal(await again.buildIndexes(), 0, 'once')
  t.equal(await again.removeEndedBefore(Date.parse('2026-02-01T00:00:00Z')), 1, 'retention finds the old run')
  t.ok(again.get('b'))
})

t.test('a record\'s events end past RECORD_EVENTS_BYTES with events_next, and go on from it', async t => {
  const { store } = open(t)
  const big = (id: number): RunEvent => encodeEvent(eventOwner('r', 't'), id, 'echo.step', 'step', JSON.stringify({ step: id, text: 'x'.repeat(300 * 1024) }), at)
  for (let id = 1; id <= 5; id++) await store.append('r', big(id))
  const first = JSON.parse(store.document(record('r', 'running', null, 5)))
  t.same(first.events.map((e: { seq: number }) => e.seq), [1, 2, 3])
  t.equal(first.events_next, 3)
  const rest = JSON.parse(store.document(record('r', 'running', null, 5), first.events_next))
  t.same(rest.events.map((e: { seq: number }) => e.seq), [4, 5])
  t.notOk('events_next' in rest, 'the last page says nothing more')
  const small = JSON.parse(store.document(record('s', 'queued', null, 0)))
  t.same([small.events, 'events_next' in small], [[], false])
})

t.test('a tenant\'s stored bytes count its ended runs\' events, added at the end and taken away by retention', async t => {
  const { store } = open(t)
  const events = [transition(record('a', 'queued', null, 1)), transition(record('a', 'running', null, 2)), step('a', 3), step('a', 4)]
  for (const e of events) await store.append('a', e)
  t.equal(store.storedBytes('t'), 0, 'a run in flight is not counted by the store')
  const end = transition(record('a', 'succeeded', at, 5))
  await store.append('a', end)
  const bytes = [...events, end].reduce((n, e) => n + e.json.length, 0)
  t.equal(store.storedBytes('t'), bytes, 'every event of the run, its end included')
  for (const e of [transition(record('b', 'queued', null, 1)), transition(record('b', 'failed', at, 2))]) await store.append('b', e)
  t.ok(store.storedBytes('t') > bytes, 'a second run adds to it')
  t.equal(store.storedBytes('other'), 0)
  t.equal(await store.removeEndedBefore(Date.parse(at) + 1), 2)
  t.equal(store.storedBytes('t'), 0, 'retention takes both away')
})
