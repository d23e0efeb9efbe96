import { decodeEvent } from '../events.js'
import type { RunEvent } from '../types.js'

/** The schema header of every event on TOPIC_RUNS. */
export const EVENT_SCHEMA = 'run-event@2'

/**
 * An event as this harness wrote it to the runs topic, with the record a
 * lifecycle event carries under `data.run`, or undefined for a message it
 * did not write (its key must name the run the event names).
 */
export function decodeLogged (key: string, text: string): RunEvent | undefined {
  try {
    const event = decodeEvent(text)
    const object = JSON.parse(text) as { seq?: unknown, run_id?: unknown, data?: { run?: unknown } }
    if (object.seq !== event.id || object.run_id !== key) return undefined
    if (object.data?.run !== undefined) event.record = JSON.stringify(object.data.run)
    return event
  } catch {
    return undefined
  }
}
