import { setImmediate as nextTurn } from 'node:timers/promises'
import { TERMINAL_EVENT_TYPES } from './catalogue.js'
import type { RunHub } from './hub.js'
import type { ReplayBudget } from './replay-budget.js'
import type { SseStream } from './sse.js'
import type { RunStore } from './store.js'
import type { RunEvent } from './types.js'

/** Events read from LMDB per turn of the event loop, at most. */
export const REPLAY_SLICE = 256
/** Bytes of events one slice holds, at most (one event larger than this is a slice alone). */
export const REPLAY_SLICE_BYTES = 256 * 1024

export interface RunSource {
  store: RunStore
  hub: RunHub
  /** False once the run's last event is stored and streamed: nothing more will come. */
  isActive(runId: string): boolean
  /** What all replays of the process hold in their slices at once. */
  budget: ReplayBudget
}

interface Slice {
  events: RunEvent[]
  bytes: number
  /** The log had nothing after it when it was read. */
  end: boolean
}

function readSlice (store: RunStore, runId: string, after: number): Slice {
  const events: RunEvent[] = []
  let bytes = 0
  for (const e of store.eventsAfter(runId, after, REPLAY_SLICE)) {
    events.push(e)
    bytes += e.json.length
    if (bytes >= REPLAY_SLICE_BYTES) return { events, bytes, end: false }
  }
  return { events, bytes, end: events.length < REPLAY_SLICE }
}

/**
 * Streams a run to `sse`: its stored events after `after`, then live ones,
 * until its terminal event; a run that has ended has nothing live to wait
 * for, so its stream ends with the replay (even when the replay is empty:
 * a Last-Event-ID at or past its end).
 *
 * The replay reads LMDB in slices of REPLAY_SLICE events or
 * REPLAY_SLICE_BYTES, whichever comes first, each reserved from the
 * process's replay budget while it is held, and yields to the event loop
 * between them, so a long run replayed to many subscribers at once
 * never holds up other requests. It goes at the pace of the subscriber's
 * socket: once the socket backs up, the rest waits until it drains, so a
 * subscriber that does not read stops its own replay (and is closed by the
 * stream's stall rule) instead of filling memory.
 *
 * Live events are subscribed to before the first slice but ignored until
 * the replay is done: every event is stored before it is announced, so one
 * announced meanwhile is read by a later slice. The switch to live events
 * happens in the same synchronous step as the read of a last, short slice
 * that was written without waiting, so no event falls between the two.
 */
export async function followRun (sse: SseStream, runId: string, after: number, source: RunSource): Promise<void> {
  let replaying = true
  const unsubscribe = source.hub.subscribe(runId, e => {
    if (replaying) return
    sse.event(e)
    if (TERMINAL_EVENT_TYPES.has(e.type)) sse.end()
  }, () => sse.end())
  sse.onClose(unsubscribe)
  let cursor = after
  while (!sse.closed) {
    // A slice's worth is reserved before the read, and what it did not need is given back after.
    await source.budget.take(REPLAY_SLICE_BYTES)
    let held = REPLAY_SLICE_BYTES
    let slice: Slice
    let waited: boolean
    try {
      if (sse.closed) return
      slice = readSlice(source.store, runId, cursor)
      held = Math.min(slice.bytes, REPLAY_SLICE_BYTES)
      source.budget.give(REPLAY_SLICE_BYTES - held)
      let written = sse.replay(slice.events, 0)
      waited = written < slice.events.length
      while (written < slice.events.length && !sse.closed) {
        await sse.drained()
        written = sse.replay(slice.events, written)
      }
    } finally {
      source.budget.give(held)
    }
    const last = slice.events.at(-1)
    if (last) cursor = last.id
    if (last && TERMINAL_EVENT_TYPES.has(last.type)) {
      sse.end()
      return
    }
    if (slice.end && !waited) {
      replaying = false
      if (!source.isActive(runId)) sse.end()
      return
    }
    if (!waited) await nextTurn()
  }
}
