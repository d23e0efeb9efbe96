import { setImmediate as nextTurn } from 'node:timers/promises'
import { TERMINAL_EVENT_TYPES } from './catalogue.js'
import type { RunHub } from './hub.js'
import type { SseStream } from './sse.js'
import type { RunStore } from './store.js'

/** Events read from LMDB per turn of the event loop. */
export const REPLAY_SLICE = 256

export interface RunSource {
  store: RunStore
  hub: RunHub
  /** False once the run's last event is stored and streamed: nothing more will come. */
  isActive(runId: string): boolean
}

/**
 * Streams a run to `sse`: its stored events after `after`, then live ones,
 * until its terminal event; a run that has ended has nothing live to wait
 * for, so its stream ends with the replay (even when the replay is empty:
 * a Last-Event-ID at or past its end).
 *
 * The replay reads LMDB in slices of REPLAY_SLICE and yields to the event
 * loop between them, so a long run replayed to many subscribers at once
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
    const slice = [...source.store.eventsAfter(runId, cursor, REPLAY_SLICE)]
    let written = sse.replay(slice, 0)
    const waited = written < slice.length
    while (written < slice.length && !sse.closed) {
      await sse.drained()
      written = sse.replay(slice, written)
    }
    const last = slice.at(-1)
    if (last) cursor = last.id
    if (last && TERMINAL_EVENT_TYPES.has(last.type)) {
      sse.end()
      return
    }
    if (slice.length < REPLAY_SLICE && !waited) {
      replaying = false
      if (!source.isActive(runId)) sse.end()
      return
    }
    if (!waited) await nextTurn()
  }
}
