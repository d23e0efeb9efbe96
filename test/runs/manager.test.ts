import t from 'tap'
import pino from 'pino'
import { openState } from '../../src/state/index.js'
import type { BusMessage } from '../../src/bus/index.js'
import { encodeEvent } from '../../src/runs/events.js'
import { RunHub } from '../../src/runs/hub.js'
import { RunManager } from '../../src/runs/manager.js'
import { echo } from '../../src/runs/modes/echo.js'
import type { Mode } from '../../src/runs/modes/index.js'
import { RunStore } from '../../src/runs/store.js'
import type { RunEvent, RunRecord } from '../../src/runs/index.js'

function setup (t: { testdir: () => string, teardown: (fn: () => unknown) => void }, modes: Record<string, Mode> = {}) {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const store = new RunStore(state)
  const hub = new RunHub()
  const published: BusMessage[] = []
  const manager = new RunManager(store, hub, new Map([['echo', echo], ...Object.entries(modes)]), m => { published.push(m) }, pino({ level: 'silent' }))
  return { store, hub, published, manager }
}

t.test('concurrent runs: each event is stored before it is streamed and published, in order per run', async t => {
  const { store, hub, published, manager } = setup(t)
  const runs = await Promise.all(Array.from({ length: 20 }, (_, i) => manager.start({ tenant: 'acme', mode: 'echo', message: `m${i}`, options: { steps: 10 } })))
  const streamed = new Map<string, RunEvent[]>()
  for (const run of runs) {
    const seen: RunEvent[] = []
    streamed.set(run.run_id, seen)
    hub.subscribe(run.run_id, e => {
      const stored = [...store.eventsAfter(run.run_id, e.id - 1)][0]
      if (stored?.json !== e.json) t.fail(`${run.run_id} event ${e.id} streamed before it was stored`)
      if (!published.some(m => m.key === run.run_id && JSON.parse(m.value as string).id === e.id - 1)) t.fail(`${run.run_id} event ${e.id} streamed before event ${e.id - 1} was published`)
      seen.push(e)
    })
  }
  const ended = await Promise.all(runs.map(r => manager.waitForEnd(r.run_id, 10_000)))
  t.same(ended.map(r => r?.status), Array(20).fill('succeeded'))
  t.equal(manager.inFlight, 0)
  for (const run of runs) {
    // The queued event was streamed before anyone could subscribe; the rest arrive live.
    t.same(streamed.get(run.run_id)!.map(e => e.id), Array.from({ length: 12 }, (_, i) => i + 2), `${run.run_id}: streamed in order`)
    t.same([...store.eventsAfter(run.run_id)].map(e => e.event), ['run.queued', 'run.running', ...Array(10).fill('step'), 'run.succeeded'])
    const messages = published.filter(m => m.key === run.run_id).map(m => JSON.parse(m.value as string))
    t.same(messages.map(m => m.id), Array.from({ length: 13 }, (_, i) => i + 1), `${run.run_id}: published in order`)
    t.same(messages.at(-1), { run_id: run.run_id, tenant_id: 'acme', id: 13, event: 'run.succeeded', data: JSON.parse(JSON.stringify(store.get(run.run_id))) })
    t.match(manager.get(run.run_id), { status: 'succeeded', last_event_id: 13 }, 'GET of an ended run reads the store')
  }
})

t.test('recovery after steps: a run left in flight ends failed (interrupted) with the next event id', async t => {
  const { store, manager } = setup(t)
  const queued: RunRecord = { run_id: 'run-x', tenant_id: 'acme', mode: 'echo', message: 'm', status: 'queued', created_at: '2026-01-01T00:00:00.000Z', started_at: null, ended_at: null, result: null, error: null, last_event_id: 1 }
  const running: RunRecord = { ...queued, status: 'running', started_at: '2026-01-01T00:00:01.000Z', last_event_id: 2 }
  await store.append('run-x', encodeEvent(1, 'run.queued', queued))
  await store.append('run-x', encodeEvent(2, 'run.running', running))
  for (let id = 3; id <= 7; id++) await store.append('run-x', encodeEvent(id, 'step', { type: 'echo', step: id - 2 }))
  t.equal(await manager.recover(), 1)
  t.match(store.get('run-x'), { status: 'failed', error: { code: 'interrupted' }, started_at: running.started_at, last_event_id: 8 })
  const events = [...store.eventsAfter('run-x')]
  t.same(events.map(e => e.id), [1, 2, 3, 4, 5, 6, 7, 8])
  t.match(JSON.parse(events.at(-1)!.data), { status: 'failed', last_event_id: 8 }, 'the terminal event carries the record')
  t.equal(await manager.recover(), 0, 'nothing is left in flight')
})

t.test('a run whose last event cannot be stored still ends, so waiters and shutdown do not hang', async t => {
  const { store, hub, published, manager } = setup(t)
  const append = store.append.bind(store)
  store.append = (runId, event) => event.event === 'run.succeeded' ? Promise.reject(new Error('disk full')) : append(runId, event)
  const run = await manager.start({ tenant: 'acme', mode: 'echo', message: 'm', options: {} })
  const streamed: string[] = []
  hub.subscribe(run.run_id, e => { streamed.push(e.event) })
  const ended = await manager.waitForEnd(run.run_id, 5_000)
  t.equal(ended?.status, 'succeeded', 'ended, not left waiting for the timeout')
  t.equal(manager.inFlight, 0)
  t.notOk(streamed.includes('run.succeeded'), 'the unstored event is not streamed')
  t.notOk(published.some(m => JSON.parse(m.value as string).event === 'run.succeeded'), 'nor published')
  await manager.drain()
})

t.test('every run has its own actor: a cancelled one changes no other run, nor the next to start', async t => {
  const { manager } = setup(t)
  const start = () => manager.start({ tenant: 'acme', mode: 'echo', message: 'm', options: { steps: 2, delay_ms: 20 } })
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
        await input.emit({ i })
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
  const run = await manager.start({ tenant: 'acme', mode: 'spin', message: 'm', options: {} })
  while ([...store.eventsAfter(run.run_id)].length < 5) await new Promise(resolve => setImmediate(resolve))
  t.equal((await manager.cancel(run.run_id))?.status, 'cancelled')
  resume()
  t.equal((await manager.waitForEnd(run.run_id, 10_000))?.status, 'cancelled')
  await modeDone
  t.match(emitError, { name: 'AbortError' }, 'the next emit rejected')
  t.equal(signalAfterCancel, true, 'a signal first read after the cancel is already aborted')
  t.same([...store.eventsAfter(run.run_id)].map(e => e.event), ['run.queued', 'run.running', 'step', 'step', 'step', 'run.cancelled'], 'no step recorded after the cancel')
})

t.test('a mode that reads its signal first is aborted by a cancel', async t => {
  let aborted: Promise<void> | undefined
  const wait: Mode = async ({ signal }) => {
    aborted = new Promise(resolve => signal.addEventListener('abort', () => resolve()))
    await aborted
    return 'late'
  }
  const { manager } = setup(t, { wait })
  const run = await manager.start({ tenant: 'acme', mode: 'wait', message: 'm', options: {} })
  while (aborted === undefined) await new Promise(resolve => setImmediate(resolve))
  t.equal((await manager.cancel(run.run_id))?.status, 'cancelled')
  await aborted
  t.match(await manager.waitForEnd(run.run_id, 10_000), { status: 'cancelled', result: null }, 'its late result changes nothing')
})
