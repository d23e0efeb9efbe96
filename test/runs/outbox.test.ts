import { randomUUID } from 'node:crypto'
import t from 'tap'
import pino from 'pino'
import type { BusMessage } from '../../src/bus/index.js'
import { openState, type StateStore } from '../../src/state/index.js'
import { RunHub } from '../../src/runs/hub.js'
import { RunManager } from '../../src/runs/manager.js'
import { echo } from '../../src/runs/modes/echo.js'
import type { Mode } from '../../src/runs/modes/index.js'
import { RunOutbox, type OutboxOptions } from '../../src/runs/outbox.js'
import { RunStore } from '../../src/runs/store.js'
import { eventually } from '../helpers/http.js'

const log = pino({ level: 'silent' })

/**
 * A bus whose publish fails while `down` is set, and refuses any batch with a
 * message longer than `refuse` bytes (as Kafka refuses one past its size limit);
 * every message it took, in order.
 */
function fakeBus () {
  const taken: BusMessage[] = []
  const bus = {
    down: false,
    refuse: Infinity,
    calls: 0,
    taken,
    publish: async (messages: BusMessage[]): Promise<void> => {
      bus.calls++
      await new Promise(resolve => setImmediate(resolve))
      if (bus.down) throw new Error('broker unreachable')
      if (messages.some(m => (m.value as string).length > bus.refuse)) throw new Error('message too large')
      taken.push(...messages)
    },
    probe: async (): Promise<void> => { if (bus.down) throw new Error('broker unreachable') }
  }
  return bus
}

/**
 * A harness process on `state`: its store, relay and manager. It takes every
 * other process on `state` for dead, as a process started after another
 * one's crash (or stop) does.
 */
function process (state: StateStore, bus: ReturnType<typeof fakeBus>, options: Partial<OutboxOptions> = {}) {
  const store = new RunStore(state)
  const id = randomUUID()
  const outbox = new RunOutbox(state, store, { maxBatch: 50, lingerMs: 2, publish: m => bus.publish(m), probe: () => bus.probe(), log, owner: { id, isAlive: other => other === id }, ...options })
  // `hang` starts and never ends: a run in flight when its process dies.
  const hang: Mode = async ({ signal }) => { await new Promise(resolve => signal.addEventListener('abort', resolve)) }
  const manager = new RunManager(store, new RunHub(), new Map<string, Mode>([['echo', echo], ['hang', hang]]), outbox, log)
  const run = (steps: number, delay = 0, message = 'm') => manager.start({ tenant: 'acme', mode: 'echo', message, options: { steps, delay_ms: delay }, conversationId: null })
  const hung = () => manager.start({ tenant: 'acme', mode: 'hang', message: 'm', options: {}, conversationId: null })
  /** As the service starts: claims the runs of dead processes, ends those in flight, relays. Resolves with how many it ended. */
  const start = async (): Promise<number> => {
    const claimed = await outbox.claim()
    const ended = await manager.recover(claimed)
    outbox.start(claimed)
    return ended
  }
  return { id, store, outbox, manager, run, hung, start }
}

/** Per run, the ids of its messages in the order they were taken. */
function byRun (messages: BusMessage[]): Map<string, string[]> {
  const runs = new Map<string, string[]>()
  for (const m of messages) {
    const value = JSON.parse(m.value as string)
    if (value.run_id !== m.key) throw new Error(`message of ${value.run_id} keyed ${m.key}`)
    runs.set(m.key, [...(runs.get(m.key) ?? []), value.id])
  }
  return runs
}

const dense = (n: number): string[] => Array.from({ length: n }, (_, i) => String(i + 1))

function markers (state: StateStore): string[] {
  return [...state.openDB<number, string>({ name: 'run-outbox' }).getKeys()]
}

t.test('every event of every run is published once, in order per run, in batches; short runs leave no marker', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const bus = fakeBus()
  const p = process(state, bus)
  await p.start()
  const runs = await Promise.all(Array.from({ length: 40 }, () => p.run(3)))
  await Promise.all(runs.map(r => p.manager.waitForEnd(r.run_id, 10_000)))
  await eventually(async () => p.outbox.waiting, n => n === 0)
  const published = byRun(bus.taken)
  t.equal(bus.taken.length, 40 * 6)
  for (const r of runs) t.same(published.get(r.run_id), dense(6), `${r.run_id}: 1..6`)
  t.ok(bus.calls < 40 * 6 / 2, `batched: ${bus.calls} publishes for ${bus.taken.length} events`)
  t.same(bus.taken[0]!.headers, { 'client-id': 'acme', schema: 'run-event@2', owner: p.id })
  await p.outbox.stop(1000)
  t.same(markers(state), [], 'nothing is left for a restart')
  await eventually(async () => [...state.openDB<string, string>({ name: 'run-owners', encoding: 'string' }).getKeys()], k => k.length === 0)
  t.same([...state.openDB<string, string>({ name: 'run-owners', encoding: 'string' }).getKeys()], [], 'nor any owner entry: every run is out')
})

/** Whether `promise` settles before the next turn of the event loop (no I/O, no timer in between). */
const settled = (promise: Promise<unknown>): Promise<'resolved' | 'pending'> =>
  Promise.race([promise.then(() => 'resolved' as const), new Promise<'pending'>(resolve => setImmediate(() => resolve('pending')))])

t.test('published: resolves once the bus took the event, not before; after its timeout while the bus is down', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const bus = fakeBus()
  const p = process(state, bus, { lingerMs: 50 })
  await p.start()
  const hung = await p.hung()
  t.equal(bus.taken.length, 0, 'the first event is lingering when the start resolves')
  await p.outbox.published(hung.run_id, 1, 10_000)
  t.equal(byRun(bus.taken).get(hung.run_id)?.[0], '1', 'it was on the bus when published resolved')
  t.equal(await settled(p.outbox.published(hung.run_id, 1, 10_000)), 'resolved', 'an id already acknowledged resolves at once')
  bus.down = true
  const late = await p.hung()
  t.equal(await settled(p.outbox.published(late.run_id, 1, 10_000)), 'pending', 'a bus that is away is waited for')
  await p.outbox.published(late.run_id, 1, 100)
  t.notOk(byRun(bus.taken).has(late.run_id), 'a bus that is away: the wait ends at its timeout, the event still queued')
  bus.down = false
  await p.outbox.published(late.run_id, 1, 10_000)
  t.equal(byRun(bus.taken).get(late.run_id)?.[0], '1', 'and is published once the bus is back')
  t.equal(await settled(p.outbox.published('run-unknown', 1, 10_000)), 'resolved', 'a run the relay does not hold is not waited for')
  await p.manager.drain()
  await p.outbox.stop(1000)
})

t.test('while the bus is down events wait, are retried, and go out once, in order, when it is back', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const bus = fakeBus()
  const p = process(state, bus)
  await p.start()
  bus.down = true
  const runs = await Promise.all(Array.from({ length: 20 }, () => p.run(5)))
  await Promise.all(runs.map(r => p.manager.waitForEnd(r.run_id, 10_000)))
  t.equal(p.outbox.waiting, 20 * 8, 'everything waits')
  await eventually(async () => bus.calls, n => n >= 3)
  t.equal(p.outbox.lastError, 'broker unreachable')
  t.equal(bus.taken.length, 0)
  bus.down = false
  await eventually(async () => p.outbox.waiting, n => n === 0)
  t.equal(p.outbox.lastError, undefined)
  const published = byRun(bus.taken)
  t.equal(bus.taken.length, 20 * 8, 'no duplicate')
  for (const r of runs) t.same(published.get(r.run_id), dense(8))
  await p.outbox.stop(1000)
})

t.test('shutdown with the bus down: what is left is published by the next process, from the logs, once', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const bus = fakeBus()
  const first = process(state, bus)
  await first.start()
  const early = await first.run(2)
  await first.manager.waitForEnd(early.run_id, 10_000)
  await eventually(async () => first.outbox.waiting, n => n === 0)
  bus.down = true
  const runs = await Promise.all(Array.from({ length: 10 }, () => first.run(4)))
  const long = await first.run(1000, 2)
  await Promise.all(runs.map(r => first.manager.waitForEnd(r.run_id, 10_000)))
  await first.manager.drain()
  await first.outbox.stop(50)
  t.equal(markers(state).length, 11, 'a marker for each run with events waiting')

  bus.down = false
  const second = process(state, bus)
  await second.start()
  await eventually(async () => second.outbox.waiting, n => n === 0)
  const published = byRun(bus.taken)
  t.same(published.get(early.run_id), dense(5), 'the run published before the outage is not published again')
  for (const r of runs) t.same(published.get(r.run_id), dense(7), `${r.run_id}: all, once`)
  const longIds = published.get(long.run_id)!
  t.same(longIds, dense(longIds.length), 'the run cut short by the shutdown: every event up to its end')
  t.match(JSON.parse(bus.taken.filter(m => m.key === long.run_id).at(-1)!.value as string), { type: 'run.failed', data: { reason: 'interrupted' } })
  await second.outbox.stop(1000)
  t.same(markers(state), [])
})

t.test('a crash (no shutdown) with the bus down: runs marked by a checkpoint and runs not marked are all published by the next process', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const deadBus = fakeBus()
  deadBus.down = true
  const first = process(state, deadBus)
  await first.start()
  const old = await Promise.all(Array.from({ length: 5 }, () => first.run(2)))
  const inFlight = await first.hung()
  await eventually(async () => markers(state).length, n => n === 6, 10_000, 50)
  const recent = await Promise.all(Array.from({ length: 5 }, () => first.run(2)))
  await Promise.all(recent.map(r => first.manager.waitForEnd(r.run_id, 10_000)))
  t.notOk(recent.some(r => markers(state).includes(r.run_id)), 'the runs made since are not marked: their owner entries cover them')
  const owners = state.openDB<string, string>({ name: 'run-owners', encoding: 'string' })
  t.ok([...old, inFlight, ...recent].every(r => owners.get(r.run_id) !== undefined), 'every run with events waiting has its owner entry')
  // From here the first process is treated as dead: no drain, no stop. (It
  // lingers in this test process; its bus stays down, so it publishes nothing.)

  const bus = fakeBus()
  const second = process(state, bus)
  t.equal(await second.start(), 1, 'the run in flight is ended')
  await eventually(async () => second.outbox.waiting, n => n === 0)
  const published = byRun(bus.taken)
  for (const r of [...old, ...recent]) t.same(published.get(r.run_id), dense(5), `${r.run_id}: all, once`)
  t.same(published.get(inFlight.run_id), dense(3), 'the run in flight: queued, started, then its end')
  t.match(JSON.parse(bus.taken.filter(m => m.key === inFlight.run_id).at(-1)!.value as string), { type: 'run.failed', data: { reason: 'interrupted' } })
  t.equal(bus.taken.length, 10 * 5 + 3, 'nothing else')
  await second.outbox.stop(1000)
  await first.manager.drain()
  await first.outbox.stop(0)
})

t.test('a crash before the first checkpoint: the runs of the dead process are published by the next one', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const deadBus = fakeBus()
  deadBus.down = true
  const first = process(state, deadBus)
  await first.start()
  const runs = await Promise.all(Array.from({ length: 5 }, () => first.run(2)))
  for (const r of runs) await first.manager.waitForEnd(r.run_id, 10_000)
  const inFlight = await first.hung()
  await eventually(async () => first.store.get(inFlight.run_id)!.status, s => s === 'running', 10_000, 2)
  t.same(markers(state), [], 'no checkpoint has marked anything yet')
  const bus = fakeBus()
  const second = process(state, bus)
  t.equal(await second.start(), 1)
  await eventually(async () => second.outbox.waiting, n => n === 0)
  const published = byRun(bus.taken)
  for (const r of runs) t.same(published.get(r.run_id), dense(5), `${r.run_id}: all, once`)
  t.same(published.get(inFlight.run_id), dense(3), 'and the end of the run in flight')
  await second.outbox.stop(1000)
  await first.manager.drain()
  await first.outbox.stop(0)
})

t.test('past its memory bounds the relay spills to LMDB and still publishes everything once, in order', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const bus = fakeBus()
  const p = process(state, bus, { maxTrackedRuns: 4, maxQueuedEvents: 10, maxBatch: 7 })
  await p.start()
  bus.down = true
  const runs = await Promise.all(Array.from({ length: 30 }, () => p.run(6)))
  await Promise.all(runs.map(r => p.manager.waitForEnd(r.run_id, 10_000)))
  t.equal(p.outbox.waiting, 30 * 9)
  t.ok(markers(state).length >= 26, 'runs past the bound were spilled to markers')
  bus.down = false
  await eventually(async () => p.outbox.waiting, n => n === 0)
  const published = byRun(bus.taken)
  t.equal(bus.taken.length, 30 * 9)
  for (const r of runs) t.same(published.get(r.run_id), dense(9), `${r.run_id}: all, once, in order`)
  await p.outbox.stop(1000)
  t.same(markers(state), [])
})

t.test('an event too large for the bus, refused while it takes others, is skipped after a few tries; nothing else is lost or reordered', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const bus = fakeBus()
  bus.refuse = 1024 * 1024
  const p = process(state, bus)
  await p.start()
  const small = await Promise.all(Array.from({ length: 10 }, () => p.run(3)))
  // 64 KiB of a control character: 384 KiB once escaped as JSON, three times in the end's record.
  const big = await p.run(2, 0, '\u0001'.repeat(64 * 1024))
  const after = await Promise.all(Array.from({ length: 10 }, () => p.run(3)))
  for (const r of [...small, big, ...after]) await p.manager.waitForEnd(r.run_id, 10_000)
  await eventually(async () => p.outbox.waiting, n => n === 0, 30_000)
  const published = byRun(bus.taken)
  for (const r of [...small, ...after]) t.same(published.get(r.run_id), dense(6), `${r.run_id}: all, in order`)
  t.same(published.get(big.run_id), ['1', '2', '3', '4'], 'the run whose end (its record holds the message thrice) the bus refuses: all before it')
  t.equal(p.outbox.dropped, 1)
  await p.outbox.stop(1000)
  t.same(markers(state), [])
})

t.test('nothing is skipped while the bus is away, nor an event of ordinary size whatever the bus says', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const bus = fakeBus()
  const p = process(state, bus)
  await p.start()
  bus.down = true
  const big = await p.run(1, 0, '\u0001'.repeat(64 * 1024))
  await p.manager.waitForEnd(big.run_id, 10_000)
  // Halved down to one event, refused three times, probed: the bus is away, so it is kept.
  await eventually(async () => bus.calls, n => n >= 5, 30_000)
  bus.down = false
  await eventually(async () => p.outbox.waiting, n => n === 0, 30_000)
  t.same(byRun(bus.taken).get(big.run_id), dense(4), 'kept, and published once the bus was back')
  bus.refuse = 0
  const calls = bus.calls
  const small = await p.run(1)
  await p.manager.waitForEnd(small.run_id, 10_000)
  // Now every message is refused while the probe answers (a missing ACL, say): events under the size bound stay.
  await eventually(async () => bus.calls, n => n >= calls + 5, 30_000)
  bus.refuse = Infinity
  await eventually(async () => p.outbox.waiting, n => n === 0, 30_000)
  t.equal(p.outbox.dropped, 0)
  t.same(byRun(bus.taken).get(small.run_id), dense(4))
  await p.outbox.stop(1000)
})

t.test('processes sharing DATA_DIR: each relays its own runs; only a dead process\'s runs are claimed, by one process, and published', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const alive = new Set(['a', 'b', 'c'])
  const owner = (id: string) => ({ owner: { id, isAlive: (other: string) => alive.has(other) } })
  const bus = fakeBus()
  const deadBus = fakeBus()
  deadBus.down = true
  const a = process(state, deadBus, owner('a'))
  const b = process(state, bus, owner('b'))
  const c = process(state, bus, owner('c'))
  for (const p of [a, b, c]) await p.start()
  const ofA = await Promise.all(Array.from({ length: 3 }, () => a.run(2)))
  const hungA = await a.hung()
  const ofB = await Promise.all(Array.from({ length: 3 }, () => b.run(2)))
  await Promise.all(ofB.map(r => b.manager.waitForEnd(r.run_id, 10_000)))
  await eventually(async () => b.outbox.waiting, n => n === 0)
  t.same([await b.outbox.claim(), await c.outbox.claim()], [[], []], 'nothing is claimed while its owner lives')
  t.same([...byRun(bus.taken).keys()].sort(), ofB.map(r => r.run_id).sort(), 'b published its own runs, and none of a\'s')

  alive.delete('a')
  const [byB, byC] = await Promise.all([b.outbox.claim(), c.outbox.claim()])
  t.same([...byB, ...byC].sort(), [...ofA, hungA].map(r => r.run_id).sort(), 'a\'s runs are claimed once, by one of them')
  const taker = byB.length > 0 ? b : c
  t.equal(await taker.manager.recover([...byB, ...byC]), 1, 'its run in flight is ended')
  taker.outbox.adopt([...byB, ...byC])
  await eventually(async () => taker.outbox.waiting, n => n === 0)
  const published = byRun(bus.taken)
  for (const r of ofA) t.same(published.get(r.run_id), dense(5), `${r.run_id}: all, once`)
  t.same(published.get(hungA.run_id), dense(3), 'and the end of the run in flight')
  const takerId = taker === b ? 'b' : 'c'
  t.same(bus.taken.filter(m => m.key === hungA.run_id).map(m => m.headers['owner']), [takerId, takerId, takerId], 'published under the taker\'s name')
  for (const p of [b, c]) await p.outbox.stop(1000)
  await a.manager.drain()
  await a.outbox.stop(0)
})
