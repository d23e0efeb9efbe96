import type { Database } from 'lmdb'
import type { StateStore } from '../storage/index.js'
import { IN_FLIGHT, isTerminal, type RunEvent, type RunRecord } from './types.js'

type EventKey = [string, number]

/**
 * Runs and their event logs in LMDB. A record and the event that changed it
 * are written in one transaction, so a replayed stream and the record agree.
 */
export class RunStore {
  private readonly runs: Database<RunRecord, string>
  private readonly events: Database<RunEvent, EventKey>

  constructor (private readonly state: StateStore) {
    this.runs = state.openDB<RunRecord, string>({ name: 'runs' })
    this.events = state.openDB<RunEvent, EventKey>({ name: 'run-events' })
  }

  get (runId: string): RunRecord | undefined {
    return this.runs.get(runId)
  }

  /** Saves the record with `event` appended (its id becomes last_event_id). */
  async append (record: RunRecord, event: RunEvent): Promise<void> {
    await this.state.transaction(() => {
      this.runs.put(record.run_id, record)
      this.events.put([record.run_id, event.id], event)
    })
  }

  /** Events of a run after `afterId`, in order. */
  * eventsAfter (runId: string, afterId = 0): Generator<RunEvent> {
    for (const { value } of this.events.getRange({ start: [runId, afterId + 1], end: [runId, Number.MAX_SAFE_INTEGER] })) yield value
  }

  * inFlight (): Generator<RunRecord> {
    for (const { value } of this.runs.getRange()) {
      if ((IN_FLIGHT as readonly string[]).includes(value.status)) yield value
    }
  }

  /** Removes terminal runs that ended before `cutoff` (ms), with their events; returns how many. */
  async removeEndedBefore (cutoff: number): Promise<number> {
    const doomed: string[] = []
    for (const { value } of this.runs.getRange()) {
      if (isTerminal(value.status) && value.ended_at !== null && Date.parse(value.ended_at) < cutoff) doomed.push(value.run_id)
    }
    await this.state.transaction(() => {
      for (const id of doomed) {
        this.runs.remove(id)
        for (const key of this.events.getKeys({ start: [id, 0], end: [id, Number.MAX_SAFE_INTEGER] })) this.events.remove(key)
      }
    })
    return doomed.length
  }
}
