import t from 'tap'
import pino from 'pino'
import { openState } from '../../src/state/index.js'
import { encodeEvent, eventOwner } from '../../src/runs/events.js'
import { RunHub } from '../../src/runs/hub.js'
import { RunManager, type EventSink } from '../../src/runs/manager.js'
import { echo } from '../../src/runs/modes/echo.js'
import type { Mode } from '../../src/runs/modes/index.js'
import { RunStore } from '../../src/runs/store.js'
import type { RunEvent, RunRecord } from '../../src/runs/index.js'

function setup (t: { testdir: () => string, teardown: (fn: () => unknown) => void }, modes: Record<string, Mode> = {}) {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const store = new RunStore(state)
  const hub = new RunHub()
  const published: Array<{ runId: string, event: RunEvent, terminal: boolean }> = []
  const tracked: Array<{ runId: string, tenantId: string, createdAt: number }> = []
  const sink: EventSink = {
    track: (runId, tenantId, createdAt) => { tracked.push({ runId, tenantId, createdAt }) },
    add: (runId, event, terminal) => { published.push({ runId, event, terminal }) }
  }
  const manager = new RunManager(store, hub, new Map([['echo', echo], ...Object.entries(modes)]), sink, pino({ level: 'silent' }))
  return { store, hub, published, tracked, manager }
}

const at = '2026-01-01T00:00:00.000Z'
function lifecycle (r: RunRecord, type: string): RunEvent {
  const json = JSON.stringify(r)
  const e = encodeEvent(eventOwner(r.run_id, r.tenant_id), r.last_event_id, type, r.status, `{"status":"${r.status}","run":${json}}`, at)
  e.record = json
  return e
}

t.test('concurrent runs: each event is stored before it is streamed and handed to the relay, in order per run', async t => {
  const { store, hub, published, tracked, manager } = setup(t)
  const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => manager.start({ tenant: 'acme', mode: 'echo', message: `m${i}`, options: { steps: 10 }, conversationId: null })))
  t.same(tracked.map(r => [r.runId, r.tenantId]), runs.map(r => [r.run_id, 'acme']), 'the relay learns of each run as it is made')
  t.same(tracked.map(r => new Date(r.createdAt).toISOString()), runs.map(r => r.created_at), 'with its creation time')
  const streamed = new Map<string, RunEvent[]>()
  for (const run of runs) {
    const seen: RunEvent[] = []
    streamed.set(run.run_id, seen)
    hub.subscribe(run.run_id, e => {
      const stored = [...store.eventsAfter(run.run_id, e.id - 1)][0]
      if (stored?.json !== e.json) t.fail(`${run.run_id} event ${e.id} streamed before it was stored`)
      if (!published.some(m => m.runId === run.run_id && m.event.id === e.id - 1)) t.fail(`${run.run_id} event ${e.id} streamed before event ${e.id - 1} went to the relay`)
      seen.push(e)
    })
  }
  const ended = await Promise.all(runs.map(r => manager.waitForEnd(r.run_id, 10_000)))
  t.same(ended.map(r => r?.status), Array(20).fill('succeeded'))
  t.equal(manager.inFlight, 0)
  for (const run of runs) {
    // The queued event was streamed before anyone could subscribe; the rest arrive live.
    t.same(streamed.get(run.run_id)!.map(e => e.id), Array.from({ length: 12 }, (_, i) => i + 2), `${run.run_id}: streamed in order`)
    t.same([...store.eventsAfter(run.run_id)].map(e => e.type), ['run.queued', 'run.started', ...Array(10).fill('echo.step'), 'run.completed'])
    const handed = published.filter(m => m.runId === run.run_id)
    t.same(handed.map(m => m.event.id), Array.from({ length: 13 }, (_, i) => i + 1), `${run.run_id}: handed over in order`)
    t.same(handed.map(m => m.terminal), [...Array(12).fill(false), true], 'the last one as the terminal event')
    t.same(JSON.parse(handed.at(-1)!.event.json).data, { status: 'succeeded', run: JSON.parse(JSON.stringify(store.get(run.run_id))) })
    t.match(manager.get(run.run_id), { status: 'succeeded', last_event_id: 13 }, 'GET of an ended run reads the store')
  }
})

t.test('recovery after steps: a run left in flight ends failed (interrupted) with the next event id', async t => {
  const { store, manager } = setup(t)
  const queued: RunRecord = { run_id: 'run-x', tenant_id: 'acme', mode: 'echo', message: 'm', status: 'queued', created_at: '2026-01-01T00:00:00.000Z', started_at: null, ended_at: null, result: null, answer: null, artifacts: [], conversation_id: 'c', error: null, last_event_id: 1 }
  const running: RunRecord = { ...queued, status: 'running', started_at: '2026-01-01T00:00:01.000Z', last_event_id: 2 }
  await store.append('run-x', lifecycle(queued, 'run.queued'))
  await store.append('run-x', lifecycle(running, 'run.started'))
  for (let id = 3; id <= 7; id++) await store.append('run-x', encodeEvent(eventOwner('run-x', 'acme'), id, 'echo.step', 'step', JSON.stringify({ step: id - 2 }), at))
  t.equal(await manager.recover(['run-x']), 1)
  t.match(store.get('run-x'), { status: 'failed', error: { code: 'interrupted' }, started_at: running.started_at, conversation_id: 'c', last_event_id: 8 })
  const events = [...store.eventsAfter('run-x')]
  t.same(events.map(e => e.id), [1, 2, 3, 4, 5, 6, 7, 8])
  t.match(JSON.parse(events.at(-1)!.json), { type: 'run.failed', message: /^Run failed: the process stopped/, data: { status: 'failed', reason: 'interrupted', error: 'interrupted', run: { status: 'failed', last_event_id: 8 } } }, 'the terminal event carries the record')
  t.equal(await manager.recover(['run-x']), 0, 'nothing is left in flight')
})

t.test('a run whose last event cannot be stored still ends, so waiters and shutdown do not hang', async t => {
  const { store, hub, published, manager } = setup(t)
  const append = store.append.bind(store)
  store.append = (runId, event) => event.type === 'run.completed' ? Promise.reject(new Error('disk full')) : append(runId, event)
  const run = await manager.start({ tenant: 'acme', mode: 'echo', message: 'm', options: {}, conversationId: null })
  const streamed: string[] = []
  hub.subscribe(run.run_id, e => { streamed.push(e.type) })
  const ended = await manager.waitForEnd(run.run_id, 5_000)
  t.equal(ended?.status, 'succeeded', 'ended, not left waiting for the timeout')
  t.equal(manager.inFlight, 0)
  t.notOk(streamed.includes('run.completed'), 'the unstored event is not streamed')
  t.notOk(published.some(m => m.event.type === 'run.completed'), 'nor published')
  await manager.drain()
})

t.test('every run has its own actor: a cancelled one changes no other run, nor the next to start', async t => {
  const { manager } = setup(t)
  const start = () => manager.start({ tenant: 'acme', mode: 'echo', message: 'm', options: { steps: 2, delay_ms: 20 }, conversationId: null })
  const [a, b, c] = await Promise.all([start(), start(), start()])
  t.equal((await manager.cancel(b!.run_id))?.status, 'cancelled', 'cancelled while queued')
  const ended = await Promise.all([a!, b!, c!].map(r => manager.waitForEnd(r.run_id, 10_000)))
  t.same(ended.map(r => r?.status), ['succeeded', 'cancelled', 'succeeded'])
  const d = await start()
  t.equal(d.status, 'queued', 'a run started after a cancel starts queued')
  t.equal((await manager.waitForEnd(d.run_id, 10_000))?.status, 'succeeded')
})

t.test('stopping a run: emit rejects for a mode that ignores its signal; a signal read after the cancel is aborted', async t => {
  let emitError: unknown
  let signalAfterCancel: boolean | undefined
  let resume!: () => void
  const cancelled = new Promise<void>(resolve => { resume = resolve })
  let modeEnded!: () => void
  const modeDone = new Promise<void>(resolve => { modeEnded = resolve })
  // `input` is not destructured: that would read its signal at the start.
  const spin: Mode = async input => {
    try {
      for (let i = 0; ; i++) {
        await input.emit('echo.step', 'spin', { i })
        if (i === 2) await cancelled
      }
    } catch (err) {
      emitError = err
      signalAfterCancel = input.signal.aborted
      throw err
    } finally {
      modeEnded()
    }
  }
  const { store, manager } = setup(t, { spin })
  const run = await manager.start({ tenant: 'acme', mode: 'spin', message: 'm', options: {}, conversationId: null })
  while ([...store.eventsAfter(run.run_id)].length < 5) await new Promise(resolve => setImmediate(resolve))
  t.equal((await manager.cancel(run.run_id))?.status, 'cancelled')
  resume()
  t.equal((await manager.waitForEnd(run.run_id, 10_000))?.status, 'cancelled')
  await modeDone
  t.match(emitError, { name: 'AbortError' }, 'the next emit rejected')
  t.equal(signalAfterCancel, true, 'a signal first read after the cancel is already aborted')
  t.same([...store.eventsAfter(run.run_id)].map(e => e.type), ['run.queued', 'run.started', 'echo.step', 'echo.step', 'echo.step', 'run.failed'], 'no step recorded after the cancel')
})

t.test('a mode that reads its signal first is aborted by a cancel', async t => {
  let aborted: Promise<void> | undefined
  const wait: Mode = async ({ signal }) => {
    aborted = new Promise(resolve => signal.addEventListener('abort', () => resolve()))
    await aborted
    return 'late'
  }
  const { manager } = setup(t, { wait })
  const run = await manager.start({ tenant: 'acme', mode: 'wait', message: 'm', options: {}, conversationId: null })
  while (aborted === undefined) await new Promise(resolve => setImmediate(resolve))
  t.equal((await manager.cancel(run.run_id))?.status, 'cancelled')
  await aborted
  t.match(await manager.waitForEnd(run.run_id, 10_000), { status: 'cancelled', result: null }, 'its late result changes nothing')
})

t.test('a cancelled run\'s late result reaches neither it nor the run its actor went to next', async t => {
  let release!: () => void
  const late = new Promise<void>(resolve => { release = resolve })
  let hold!: () => void
  const held = new Promise<void>(resolve => { hold = resolve })
  let lateReturned!: () => void
  const returned = new Promise<void>(resolve => { lateReturned = resolve })
  const slow: Mode = async ({ signal }) => {
    await new Promise<void>(resolve => signal.addEventListener('abort', () => resolve()))
    await late
    lateReturned()
    return { output: 'late' }
  }
  const waiting: Mode = async () => {
    await held
    return { output: 'done' }
  }
  const { store, manager } = setup(t, { slow, waiting })
  const a = await manager.start({ tenant: 'acme', mode: 'slow', message: 'm', options: {}, conversationId: null })
  while ([...store.eventsAfter(a.run_id)].length < 2) await new Promise(resolve => setImmediate(resolve))
  t.equal((await manager.cancel(a.run_id))?.status, 'cancelled')
  t.equal((await manager.waitForEnd(a.run_id, 10_000))?.status, 'cancelled', 'a has ended: its actor is free')
  const b = await manager.start({ tenant: 'acme', mode: 'waiting', message: 'm', options: {}, conversationId: null })
  while ([...store.eventsAfter(b.run_id)].length < 2) await new Promise(resolve => setImmediate(resolve))
  release()
  await returned
  await new Promise(resolve => setImmediate(resolve))
  hold()
  t.equal((await manager.waitForEnd(b.run_id, 10_000))?.status, 'succeeded', 'b ends as its own mode says')
  t.same([...store.eventsAfter(a.run_id)].map(e => e.type), ['run.queued', 'run.started', 'run.failed'], 'nothing recorded for a after its end')
  t.same([...store.eventsAfter(b.run_id)].map(e => e.type), ['run.queued', 'run.started', 'run.completed'])
  t.equal(store.get(b.run_id)?.answer, 'done')
})

t.test('a mode may emit only the catalogue\'s step types: another fails its run, and nothing of it is recorded', async t => {
  const rogue: Mode = async ({ emit }) => {
    await emit('run.completed', 'forged end', {})
    return { output: 'never' }
  }
  const { store, manager } = setup(t, { rogue })
  const run = await manager.start({ tenant: 'acme', mode: 'rogue', message: 'm', options: {}, conversationId: null })
  t.match(await manager.waitForEnd(run.run_id, 10_000), { status: 'failed', answer: null, error: { code: 'mode_failed', message: /unknown type "run.completed"/ } })
  t.same([...store.eventsAfter(run.run_id)].map(e => e.type), ['run.queued', 'run.started', 'run.failed'])
})

t.test('the answer is the mode result\'s string output, else null', async t => {
  const answers: Record<string, Mode> = { text: async () => ({ output: 'the answer' }), number: async () => ({ output: 42 }), bare: async () => 'x' }
  const { manager } = setup(t, answers)
  for (const [mode, answer] of [['text', 'the answer'], ['number', null], ['bare', null]] as const) {
    const run = await manager.start({ tenant: 'acme', mode, message: 'm', options: {}, conversationId: null })
    t.match(await manager.waitForEnd(run.run_id, 10_000), { status: 'succeeded', answer }, mode)
  }
})

t.test('abandoning runs (their partition moved): their modes stop, nothing more of them is committed or streamed, waiters get the record as it is', async t => {
  const { store, hub, manager } = setup(t)
  const start = () => manager.start({ tenant: 'acme', mode: 'echo', message: 'm', options: { steps: 1000, delay_ms: 5 }, conversationId: null })
  const [gone, kept] = await Promise.all([start(), start()])
  while ([...store.eventsAfter(gone!.run_id)].length < 4) await new Promise(resolve => setImmediate(resolve))
  const waiting = manager.waitForEnd(gone!.run_id, 10_000)
  let detached = false
  let streamedAfter = 0
  hub.subscribe(gone!.run_id, () => { streamedAfter++ }, () => { detached = true })
  t.same(manager.abandon(id => id === gone!.run_id), [gone!.run_id])
  hub.detach(gone!.run_id)
  t.equal((await waiting)?.status, 'running', 'the waiter is told, with the run as it was')
  t.notOk(manager.isActive(gone!.run_id))
  t.ok(detached, 'its stream subscribers are told to go elsewhere')
  const stored = [...store.eventsAfter(gone!.run_id)].length
  await new Promise(resolve => setTimeout(resolve, 50))
  t.equal([...store.eventsAfter(gone!.run_id)].length, stored, 'no event of it is committed after')
  t.equal(streamedAfter, 0, 'nor streamed')
  t.equal(manager.cancel(gone!.run_id) instanceof Promise, true)
  t.ok(manager.isActive(kept!.run_id), 'the other run goes on')
  await manager.cancel(kept!.run_id)
})

t.test('a run accepted elsewhere past the bounds, or for a mode this process lacks, is recorded and failed with the reason', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const store = new RunStore(state)
  const manager = new RunManager(store, new RunHub(), new Map([['echo', echo]]), { track () {}, add () {} }, pino({ level: 'silent' }), { total: 1, perTenant: 1 })
  const runId = (n: number): string => `run-01a22228-7052-7fe6-95ab-3ea3abf5150${n}`
  const first = await manager.accept({ runId: runId(1), createdAt: Date.parse(at), tenant: 'acme', mode: 'echo', message: 'm', options: { steps: 100, delay_ms: 20 }, conversationId: null })
  t.same([first.run_id, first.created_at], [runId(1), at], 'the id and the time it was accepted with')
  const over = await manager.accept({ runId: runId(2), tenant: 'acme', mode: 'echo', message: 'm', options: {}, conversationId: null })
  t.match(over, { status: 'failed', error: { code: 'runs_in_flight_limit' } })
  const unknown = await manager.accept({ runId: runId(3), tenant: 'other', mode: 'nope', message: 'm', options: {}, conversationId: null })
  t.match(unknown, { status: 'failed', error: { code: 'unknown_mode' } })
  t.same([...store.eventsAfter(runId(3))].map(e => e.type), ['run.queued', 'run.failed'])
  await manager.cancel(runId(1))
})

t.test('per client address: past its bound a start is refused with the bound named; another address and the end of a run make room', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const manager = new RunManager(new RunStore(state), new RunHub(), new Map([['echo', echo]]), { track () {}, add () {} }, pino({ level: 'silent' }), { total: 100, perTenant: 100, perAddress: 2 })
  const long = { mode: 'echo', message: 'm', options: { steps: 100, delay_ms: 50 }, conversationId: null }
  const mine = await Promise.all(['a', 'b'].map(tenant => manager.start({ tenant, address: '192.0.2.1', ...long })))
  await t.rejects(manager.start({ tenant: 'c', address: '192.0.2.1', ...long }), { code: 'overloaded', message: 'runs_in_flight_limit', details: { detail: 'at most 2 for this client address queued or running' } }, 'a third tenant named by the same client does not help it')
  const theirs = await manager.start({ tenant: 'c', address: '192.0.2.2', ...long })
  await manager.cancel(mine[0]!.run_id)
  const again = await manager.start({ tenant: 'c', address: '192.0.2.1', ...long })
  for (const run of [mine[1]!, theirs, again]) await manager.cancel(run.run_id)
  t.equal(manager.inFlight, 0)
})

t.test('a run that outlives its lifetime fails with run_timeout and leaves the bounds', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const manager = new RunManager(new RunStore(state), new RunHub(), new Map([['echo', echo]]), { track () {}, add () {} }, pino({ level: 'silent' }), { total: 1, perTenant: 1, lifetimeMs: 100 })
  const run = await manager.start({ tenant: 'acme', mode: 'echo', message: 'm', options: { steps: 1000, delay_ms: 60_000 }, conversationId: null })
  const ended = await manager.waitForEnd(run.run_id, 10_000)
  t.match(ended, { status: 'failed', error: { code: 'run_timeout' } })
  t.equal(manager.inFlight, 0)
  // Accepted, not refused for the bounds: the place was given back. How it ends is the 100 ms lifetime's business on a busy machine.
  const next = await manager.start({ tenant: 'acme', mode: 'echo', message: 'm', options: {}, conversationId: null })
  t.match(next, { run_id: /^run-/ }, 'its place was free again')
  t.notMatch(await manager.waitForEnd(next.run_id, 10_000), { error: { code: 'runs_in_flight_limit' } })
})
