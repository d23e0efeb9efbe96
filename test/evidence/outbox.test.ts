import t from 'tap'
import pino from 'pino'
import { LocalBus, type Bus, type BusMessage, type TransactionalLog } from '../../src/bus/index.js'
import { Outbox, RELAY_BATCH_MAX } from '../../src/evidence/index.js'
import { openState, type Owner, type StateStore } from '../../src/state/index.js'
import { eventually } from '../helpers/http.js'

const log = pino({ level: 'silent' })
const TOPIC = 'stream.events.v1'
const DEVICES = 7

function setup (t: { testdir: () => string, teardown: (fn: () => unknown) => void }) {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const alive = new Set<string>()
  const owner = (id: string): Owner => { alive.add(id); return { id, isAlive: other => alive.has(other) } }
  return { state, alive, owner, local: new LocalBus(state) }
}

/** A bus like Kafka's (no transactions with LMDB) that counts its calls and keeps what it got. */
function countingBus (): Bus & { calls: number, got: BusMessage[] } {
  const bus = {
    kind: 'kafka' as const,
    calls: 0,
    got: [] as BusMessage[],
    start: async () => {},
    probe: async () => {},
    unavailable: () => undefined,
    close: async () => {},
    publish: async (_topic: string, messages: BusMessage[]) => { bus.calls++; bus.got.push(...messages) }
  }
  return bus
}

async function fill (state: StateStore, outbox: Outbox, n: number, size = 20): Promise<void> {
  for (let from = 0; from < n; from += 250) {
    await state.transaction(() => {
      for (let i = from; i < Math.min(n, from + 250); i++) outbox.enqueueInTransaction(TOPIC, { key: `dev-${i % DEVICES}`, value: `${i}:${'x'.repeat(size)}`, headers: { 'message-id': `c/evt-${i}` } })
    })
  }
}

/** Each device's sequence numbers, in the order they were published. */
function perKey (messages: BusMessage[]): Map<string, number[]> {
  const out = new Map<string, number[]>()
  for (const m of messages) out.set(m.key, [...out.get(m.key) ?? [], Number(String(m.value).split(':')[0])])
  return out
}

function assertAllOnceInOrder (t: any, messages: BusMessage[], n: number): void {
  t.equal(messages.length, n, 'every envelope once')
  t.equal(new Set(messages.map(m => m.headers['message-id'])).size, n, 'no duplicate')
  for (const [key, seqs] of perKey(messages)) t.same(seqs, [...seqs].sort((a, b) => a - b), `${key} in order`)
}

t.test('a backlog of thousands drains in a bounded number of bus calls, in order per key (Kafka-like bus)', async t => {
  const { state, owner } = setup(t)
  const bus = countingBus()
  const outbox = new Outbox(state, bus, log, owner('a'))
  await fill(state, outbox, 3000)
  outbox.start()
  t.teardown(() => outbox.stop())
  t.equal(await eventually(async () => outbox.backlog, n => n === 0), 0, 'drained')
  t.equal(bus.calls, Math.ceil(3000 / RELAY_BATCH_MAX), `${Math.ceil(3000 / RELAY_BATCH_MAX)} publish calls for 3000 envelopes`)
  assertAllOnceInOrder(t, bus.got, 3000)
})

t.test('on the local bus each step is one transaction: one append per step, nothing published apart', async t => {
  const { state, owner, local } = setup(t)
  let appends = 0
  let publishes = 0
  const counted: TransactionalLog = {
    kind: 'local',
    state,
    start: async () => {},
    probe: async () => {},
    unavailable: () => undefined,
    close: async () => {},
    publish: async (topic, messages) => { publishes++; await local.publish(topic, messages) },
    appendInTransaction: (topic, messages) => { appends++; local.appendInTransaction(topic, messages) }
  }
  const outbox = new Outbox(state, counted, log, owner('a'))
  await fill(state, outbox, 3000)
  outbox.start()
  t.teardown(() => outbox.stop())
  t.equal(await eventually(async () => outbox.backlog, n => n === 0), 0, 'drained')
  t.same([appends, publishes], [Math.ceil(3000 / RELAY_BATCH_MAX), 0])
  assertAllOnceInOrder(t, [...local.read(TOPIC)], 3000)
})

t.test('a step stays under its byte bound: big envelopes go a few at a time, one bigger than the bound alone', async t => {
  const { state, owner } = setup(t)
  const bus = countingBus()
  const outbox = new Outbox(state, bus, log, owner('a'))
  await fill(state, outbox, 20, 200_000)
  await state.transaction(() => outbox.enqueueInTransaction(TOPIC, { key: 'dev-big', value: `20:${'x'.repeat(700_000)}`, headers: { 'message-id': 'c/evt-20' } }))
  const sizes: number[] = []
  const publish = bus.publish
  bus.publish = async (topic, messages) => { sizes.push(messages.reduce((n, m) => n + String(m.value).length, 0)); await publish(topic, messages) }
  outbox.start()
  t.teardown(() => outbox.stop())
  await eventually(async () => outbox.backlog, n => n === 0)
  t.ok(sizes.slice(0, -1).every(s => s <= 512 * 1024), `every step of small ones within 512 KiB (${sizes})`)
  t.ok(sizes[sizes.length - 1]! > 512 * 1024, 'the big one alone')
  assertAllOnceInOrder(t, bus.got, 21)
})

t.test('processes sharing DATA_DIR: one relays (a lease), the others take over only when it is gone', async t => {
  const { state, alive, owner } = setup(t)
  const bus = countingBus()
  const a = new Outbox(state, bus, log, owner('a'))
  const b = new Outbox(state, bus, log, owner('b'))
  await fill(state, a, 400)
  await fill(state, b, 400)
  a.start()
  b.start()
  t.teardown(() => Promise.all([a.stop(), b.stop()]))
  await eventually(async () => a.backlog, n => n === 0)
  t.equal(bus.got.length, 800, 'every envelope of both, once: keys from two processes never collide')
  const lease = state.openDB<string, string>({ name: 'evidence-outbox-meta' })
  const leader = lease.get('relay')!
  t.ok(leader === 'a' || leader === 'b')
  alive.delete(leader)
  const follower = leader === 'a' ? b : a
  await fill(state, follower, 10)
  follower.notify()
  t.equal(await eventually(async () => lease.get('relay'), holder => holder !== leader), leader === 'a' ? 'b' : 'a', 'the lease passes when its holder is gone')
  await eventually(async () => follower.backlog, n => n === 0)
  t.equal(bus.got.length, 810)
})
