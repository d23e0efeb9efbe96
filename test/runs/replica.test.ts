import t from 'tap'
import pino from 'pino'
import type { BusMessage, FollowableBus, StoredMessage } from '../../src/bus/index.js'
import { openState } from '../../src/state/index.js'
import { LIFECYCLE_EVENT } from '../../src/runs/catalogue.js'
import { encodeEvent, eventOwner } from '../../src/runs/events.js'
import { RunReplica } from '../../src/runs/replica.js'
import { RunStore } from '../../src/runs/store.js'
import type { RunRecord } from '../../src/runs/index.js'
import { eventually } from '../helpers/http.js'

const at = '2026-01-01T00:00:00.000Z'
const record = (id: string, status: RunRecord['status'], lastEventId: number): RunRecord => ({
  run_id: id, tenant_id: 'acme', mode: 'echo', message: 'm', status, created_at: at, started_at: null, ended_at: null, result: null, answer: null, artifacts: [], conversation_id: null, error: null, last_event_id: lastEventId
})
const lifecycle = (id: string, status: RunRecord['status'], seq: number): string =>
  encodeEvent(eventOwner(id, 'acme'), seq, LIFECYCLE_EVENT[status], status, `{"status":"${status}","run":${JSON.stringify(record(id, status, seq))}}`, at).json
const step = (id: string, seq: number): string => encodeEvent(eventOwner(id, 'acme'), seq, 'echo.step', 'step', `{"step":${seq}}`, at).json

/** A bus whose one subscription the test feeds by hand, and which keeps what is published. */
function fakeBus () {
  let handler: ((messages: StoredMessage[]) => Promise<void>) | undefined
  let offset = 0
  const published: BusMessage[] = []
  const bus = {
    kind: 'kafka' as const,
    start: async () => undefined,
    probe: async () => undefined,
    unavailable: () => undefined,
    close: async () => undefined,
    publish: async (_topic: string, messages: BusMessage[]) => { published.push(...messages) },
    subscribe: (_topic: string, _options: unknown, h: typeof handler) => {
      handler = h
      return { caughtUp: async () => true, stop: async () => undefined }
    }
  } satisfies FollowableBus
  const deliver = (...messages: Array<[key: string, value: string, owner: string]>) =>
    handler!(messages.map(([key, value, owner]) => ({ topic: 'runs', offset: offset++, key, value, headers: { owner }, timestamp: 0 })))
  return { bus, published, deliver }
}

async function replica (t: { testdir: () => string, teardown: (fn: () => unknown) => void }, alive: Set<string>) {
  const state = openState(t.testdir())
  const store = new RunStore(state)
  const { bus, published, deliver } = fakeBus()
  const r = new RunReplica({ state, store, bus, topic: 'runs', clientId: 'gw', self: 'me', isLocal: id => id === 'me', isAlive: async id => alive.has(id), log: pino({ level: 'silent' }) })
  await r.start()
  t.teardown(async () => { await r.stop(); await state.close() })
  return { store, published, deliver }
}

t.test('the log is materialised as the owner stored it: only the next event of a run, nothing after its first end', async t => {
  const { store, deliver } = await replica(t, new Set(['other']))
  await deliver(['run-a', lifecycle('run-a', 'queued', 1), 'other'], ['run-a', lifecycle('run-a', 'queued', 1), 'other'], ['run-a', lifecycle('run-a', 'running', 2), 'other'])
  await deliver(['run-a', step('run-a', 4), 'other'], ['run-a', step('run-a', 3), 'other'], ['run-a', step('run-a', 3), 'other'])
  t.same([...store.eventsAfter('run-a')].map(e => e.id), [1, 2, 3], 'a repeat is skipped, and so is an event past a gap')
  t.match(store.get('run-a'), { status: 'running', last_event_id: 3 }, 'the record is the one the last lifecycle event carried')
  await deliver(['run-a', lifecycle('run-a', 'cancelled', 4), 'other'], ['run-a', lifecycle('run-a', 'failed', 4), 'me'], ['run-a', step('run-a', 5), 'other'])
  t.match(store.get('run-a'), { status: 'cancelled', last_event_id: 4 }, 'the first end in the log wins; nothing after it is taken')
  await deliver(['run-b', 'not json', 'other'], ['run-c', lifecycle('run-d', 'queued', 1), 'other'], ['run-e', step('run-e', 1).replace('"seq":1', '"seq":2'), 'other'])
  t.same(['run-b', 'run-c', 'run-d', 'run-e'].map(id => store.get(id)), [undefined, undefined, undefined, undefined], 'malformed messages, or keyed by another run, are skipped')
})

t.test('runs in flight of a node whose heartbeat is stale are ended (failed, interrupted) on the log; a live node\'s are not', async t => {
  const alive = new Set(['live', 'dying'])
  const { published, deliver, store } = await replica(t, alive)
  await deliver(['run-live', lifecycle('run-live', 'queued', 1), 'live'], ['run-dead', lifecycle('run-dead', 'queued', 1), 'dying'], ['run-dead', lifecycle('run-dead', 'running', 2), 'dying'], ['run-dead', step('run-dead', 3), 'dying'],
    ['run-done', lifecycle('run-done', 'queued', 1), 'dying'], ['run-done', lifecycle('run-done', 'succeeded', 2), 'dying'], ['run-mine', lifecycle('run-mine', 'queued', 1), 'me'])
  alive.delete('dying')
  await eventually(async () => published.length, n => n > 0, 10_000)
  t.equal(published.length, 1, 'one end: the dead node\'s run in flight, not its ended run, nor a live node\'s, nor this node\'s own')
  const end = published[0]!
  t.equal(end.key, 'run-dead')
  t.same(end.headers, { 'client-id': 'acme', schema: 'run-event@2', owner: 'me' })
  t.match(JSON.parse(end.value as string), { id: '4', seq: 4, type: 'run.failed', run_id: 'run-dead', data: { reason: 'interrupted', run: { status: 'failed', error: { code: 'interrupted' }, last_event_id: 4 } } })
  await deliver(['run-dead', end.value as string, 'me'])
  t.match(store.get('run-dead'), { status: 'failed', last_event_id: 4 }, 'the end is taken from the log like any event')
})
