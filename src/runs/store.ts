import type { Database } from 'lmdb'
import type { StateStore } from '../state/index.js'
import { TERMINAL_EVENT_TYPES } from './catalogue.js'
import { decodeEvent } from './events.js'
import { isTerminal, type RunEvent, type RunRecord } from './types.js'

type EventKey = [string, number]

const LAST = Number.MAX_SAFE_INTEGER

/** Where a run's event log ends: its newest id (0 when it has none) and whether that event ended the run. */
export interface LogEnd {
  id: number
  terminal: boolean
}

/**
 * Runs and their event logs in LMDB, kept as the JSON text each event was
 * encoded to once:
 *
 * - `run-events-v3`, key (run_id, event id): every event's `json`;
 * - `runs-v3`, key run_id: the record as of the run's last lifecycle event
 *   (written with it, in one transaction). Steps do not rewrite it, so its
 *   `last_event_id` is read from the event log.
 *
 * (The `-v2` databases of the previous envelope and the msgpack ones before
 * them are not read.)
 */
export class RunStore {
  private readonly runs: Database<string, string>
  private readonly events: Database<string, EventKey>

  constructor (private readonly state: StateStore) {
    this.runs = state.openDB<string, string>({ name: 'runs-v3', encoding: 'string' })
    this.events = state.openDB<string, EventKey>({ name: 'run-events-v3', encoding: 'string' })
  }

  get (runId: string): RunRecord | undefined {
    const json = this.runs.get(runId)
    return json === undefined ? undefined : this.withLastEventId(JSON.parse(json) as RunRecord)
  }

  /**
   * Queues `event` for the next commit, with the run's new record when it is
   * a lifecycle event, in one transaction. Resolves once committed; lmdb-js
   * commits queued writes in call order, so the promises of successive calls
   * resolve in order, and writes queued while a commit is in flight (any
   * run's) go together into the next one.
   */
  append (runId: string, event: RunEvent): Promise<boolean> {
    const record = event.record
    if (record === undefined) return this.events.put([runId, event.id], event.json)
    return this.state.batch(() => {
      this.runs.put(runId, record)
      this.events.put([runId, event.id], event.json)
    })
  }

  /** Events of a run after `afterId`, in order, at most `limit`. */
  * eventsAfter (runId: string, afterId = 0, limit?: number): Generator<RunEvent> {
    const range = this.events.getRange({ start: [runId, afterId + 1], end: [runId, LAST], ...(limit === undefined ? {} : { limit }) })
    for (const { value } of range) yield decodeEvent(value)
  }

  /** The newest event of a run's log. */
  logEnd (runId: string): LogEnd {
    for (const { value } of this.events.getRange({ start: [runId, LAST], end: [runId, 0], reverse: true, limit: 1 })) {
      const last = decodeEvent(value)
      return { id: last.id, terminal: TERMINAL_EVENT_TYPES.has(last.type) }
    }
    return { id: 0, terminal: false }
  }

  * inFlight (): Generator<RunRecord> {
    for (const { value } of this.runs.getRange()) {
      const record = JSON.parse(value) as RunRecord
      if (!isTerminal(record.status)) yield this.withLastEventId(record)
    }
  }

  /** Ids of the runs whose id sorts at or after `from` (run ids sort by creation time), or of all runs. */
  * runIdsFrom (from?: string): Generator<string> {
    for (const key of this.runs.getKeys(from === undefined ? {} : { start: from })) yield key
  }

  /** Removes terminal runs that ended before `cutoff` (ms), with their events, except those `keep` holds; returns how many. */
  async removeEndedBefore (cutoff: number, keep: (runId: string) => boolean = () => false): Promise<number> {
    const doomed: string[] = []
    for (const { value } of this.runs.getRange()) {
      const record = JSON.parse(value) as RunRecord
      if (isTerminal(record.status) && record.ended_at !== null && Date.parse(record.ended_at) < cutoff && !keep(record.run_id)) doomed.push(record.run_id)
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
