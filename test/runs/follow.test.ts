import t from 'tap'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { openState } from '../../src/state/index.js'
import { encodeEvent, eventOwner } from '../../src/runs/events.js'
import { followRun, REPLAY_SLICE_BYTES } from '../../src/runs/follow.js'
import { RunHub } from '../../src/runs/hub.js'
import { ReplayBudget } from '../../src/runs/replay-budget.js'
import { RunStore } from '../../src/runs/store.js'
import type { SseStream } from '../../src/runs/sse.js'
import type { RunEvent } from '../../src/runs/index.js'

/** A subscriber's stream: one that takes every write, or one whose socket takes nothing until it is closed. */
function subscriber (reads: boolean) {
  const got: number[] = []
  const closers: Array<() => void> = []
  let wake = (): void => undefined
  const sse = {
    closed: false,
    onClose: (fn: () => void) => { closers.push(fn) },
    event: (e: RunEvent) => { got.push(e.id) },
    replay: (list: readonly RunEvent[], from: number) => {
      if (!reads) return from
      for (const e of list.slice(from)) got.push(e.id)
      return list.length
    },
    drained: async () => new Promise<void>(resolve => { wake = resolve }),
    end: () => { sse.closed = true }
  }
  const close = (): void => {
    sse.closed = true
    for (const fn of closers) fn()
    wake()
  }
  return { sse: sse as unknown as SseStream, got, close }
}

t.test('a replay waits for the process\'s replay budget: a stalled subscriber holding it delays others until it is closed, never more memory', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const store = new RunStore(state)
  const at = '2026-01-01T00:00:00.000Z'
  for (let id = 1; id <= 3; id++) await store.append('r', encodeEvent(eventOwner('r', 't'), id, 'echo.step', 'step', JSON.stringify({ text: 'x'.repeat(REPLAY_SLICE_BYTES) }), at))
  const budget = new ReplayBudget(REPLAY_SLICE_BYTES)
  const source = { store, hub: new RunHub(), isActive: () => false, budget }
  const stalled = subscriber(false)
  const stalledDone = followRun(stalled.sse, 'r', 0, source)
  await nextTurn()
  t.equal(budget.inUse, REPLAY_SLICE_BYTES, 'the stalled one holds its slice')
  const reader = subscriber(true)
  const readerDone = followRun(reader.sse, 'r', 0, source)
  for (let i = 0; i < 5; i++) await nextTurn()
  t.same(reader.got, [], 'the reader waits its turn rather than reading more into memory')
  stalled.close()
  await Promise.all([stalledDone, readerDone])
  t.same(reader.got, [1, 2, 3], 'then gets every event')
  t.equal(budget.inUse, 0, 'and everything is given back')
})
