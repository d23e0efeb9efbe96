import type { Database } from 'lmdb'
import type { StateStore } from '../state/index.js'
import { decodeEvent } from './events.js'
import { isTerminal, type RunEvent, type RunRecord } from './types.js'

type EventKey = [string, number]

const LAST = Number.MAX_SAFE_INTEGER

/**
 * Runs and their event logs in LMDB, kept as the JSON text each event was
 * encoded to once:
 *
 * - `run-events-v2`, key (run_id, event id): every event's `json`;
 * - `runs-v2`, key run_id: the record as of the run's last transition (that
 *   transition's data). Steps do not rewrite it, so its `last_event_id` is
 *   read from the event log.
 *
 * (The `runs` / `run-events` databases of earlier versions held msgpack
 * values and are not read.)
 */
export class RunStore {
  private readonly runs: Database<string, string>
  private readonly events: Database<string, EventKey>

  constructor (private readonly state: StateStore) {
    this.runs = state.openDB<string, string>({ name: 'runs-v2', encoding: 'string' })
    this.events = state.openDB<string, EventKey>({ name: 'run-events-v2', encoding: 'string' })
  }

  get (runId: string): RunRecord | undefined {
    const json = this.runs.get(runId)
    return json === undefined ? undefined : this.withLastEventId(JSON.parse(json) as RunRecord)
  }

  /**
   * Queues `event` for the next commit, with the run's new record (its data)
   * when it is a transition, in one transaction. Resolves once committed;
   * lmdb-js commits queued writes in call order, so the promises of
   * successive calls resolve in order, and writes queued while a commit is
   * in flight (any run's) go together into the next one.
   */
  append (runId: string, event: RunEvent): Promise<boolean> {
    if (event.event === 'step') return this.events.put([runId, event.id], event.json)
    return this.state.batch(() => {
      this.runs.put(runId, event.data)
      this.events.put([runId, event.id], event.json)
    })
  }

  /** Events of a run after `afterId`, in order. */
  * eventsAfter (runId: string, afterId = 0): Generator<RunEvent> {
    for (const { value } of this.events.getRange({ start: [runId, afterId + 1], end: [runId, LAST] })) yield decodeEvent(value)
  }

  * inFlight (): Generator<RunRecord> {
    for (const { value } of this.runs.getRange()) {
      const record = JSON.parse(value) as RunRecord
      if (!isTerminal(record.status)) yield this.withLastEventId(record)
    }
  }

  /** Removes terminal runs that ended before `cutoff` (ms), with their events; returns how many. */
  async removeEndedBefore (cutoff: number): Promise<number> {
    const doomed: string[] = []
    for (const { value } of this.runs.getRange()) {
      const record = JSON.parse(value) as RunRecord
      if (isTerminal(record.status) && record.ended_at !== null && Date.parse(record.ended_at) < cutoff) doomed.push(record.run_id)
    }
    await this.state.transaction(() => {
      for (const id of doomed) {
        this.runs.remove(id)
        for (const key of this.events.getKeys({ start: [id, 0], end: [id, LAST] })) this.events.remove(key)
      }
    })
    return doomed.length
  }

  /** `record` with `last_event_id` set to the id of the run's newest stored event. */
  private withLastEventId (record: RunRecord): RunRecord {
    for (const [, id] of this.events.getKeys({ start: [record.run_id, LAST], end: [record.run_id, 0], reverse: true, limit: 1 })) record.last_event_id = id
    return record
  }
}
