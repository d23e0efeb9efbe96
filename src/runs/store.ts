import type { Database } from 'lmdb'
import type { StateStore } from '../state/index.js'
import { TERMINAL_EVENT_TYPES } from './catalogue.js'
import { decodeEvent, eventTenant } from './events.js'
import type { RunEvent, RunRecord } from './types.js'

type EventKey = [string, number]
type PartitionKey = [number, string]
type EndKey = [number, string]

const LAST = Number.MAX_SAFE_INTEGER
/** Runs one retention or cleanup transaction removes at most, so neither holds LMDB's write lock for long. */
const REMOVE_SLICE = 2000
const INDEXES_BUILT = 'indexes-v1'
/** Bytes of events one record answer carries: a 1,000-step run of 64 KiB steps was one 66 MB string. */
export const RECORD_EVENTS_BYTES = 1024 * 1024

/** Where a run's event log ends: its newest id (0 when it has none) and whether that event ended the run. */
export interface LogEnd {
  id: number
  terminal: boolean
}

/** An event read from a partition of the runs topic, to store with the partition's new position. */
export interface LoggedEvent {
  runId: string
  event: RunEvent
}

export interface RunStoreOptions {
  /**
   * The partition of the runs topic a run belongs to, in a cluster. When
   * set, the store also keeps the runs in flight and all runs by partition,
   * so a new owner finds the runs it must end without reading every run, and
   * a partition this process no longer owns is dropped in one range.
   */
  partitionOf?: (runId: string) => number
}

/**
 * Runs and their event logs in LMDB, kept as the JSON text each event was
 * encoded to once:
 *
 * - `run-events-v3`, key (run_id, event id): every event's `json`;
 * - `runs-v3`, key run_id: the record as of the run's last lifecycle event
 *   (written with it, in one transaction). Steps do not rewrite it, so its
 *   `last_event_id` is read from the event log;
 * - `runs-by-tenant-v1` (tenant, run_id), written with a run's first event:
 *   what `GET /runs` pages through (`list.ts`);
 * - `runs-by-end-v1` (ended_at in ms, run_id) → tenant, written with a run's
 *   end: retention reads only the runs past it, however many runs there are;
 * - `run-bytes-by-tenant-v1` tenant → bytes of the events of its ended runs,
 *   added with a run's end and taken away with its removal: what the
 *   tenant's storage quota counts (`tenant-storage.ts`);
 * - with `partitionOf`: `runs-in-flight-v1` and `runs-by-partition-v1`
 *   (partition, run_id), and `run-partitions-v1` partition → the offset of
 *   the runs topic up to which this store holds the partition.
 *
 * Everything an event changes commits in one transaction with it.
 */
export class RunStore {
  private readonly runs: Database<string, string>
  private readonly events: Database<string, EventKey>
  private readonly tenants: Database<string, [string, string]>
  private readonly ends: Database<string, EndKey>
  private readonly meta: Database<string, string>
  private readonly tenantBytes: Database<number, string>
  private readonly inFlight: Database<string, PartitionKey> | undefined
  private readonly byPartition: Database<string, PartitionKey> | undefined
  private readonly offsets: Database<number, number> | undefined
  private readonly holders: Database<string, number> | undefined
  private readonly partitionOf: ((runId: string) => number) | undefined

  constructor (private readonly state: StateStore, options: RunStoreOptions = {}) {
    this.runs = state.openDB<string, string>({ name: 'runs-v3', encoding: 'string' })
    this.events = state.openDB<string, EventKey>({ name: 'run-events-v3', encoding: 'string' })
    this.tenants = state.openDB<string, [string, string]>({ name: 'runs-by-tenant-v1', encoding: 'string' })
    this.ends = state.openDB<string, EndKey>({ name: 'runs-by-end-v1', encoding: 'string' })
    this.meta = state.openDB<string, string>({ name: 'run-store-meta', encoding: 'string' })
    this.tenantBytes = state.openDB<number, string>({ name: 'run-bytes-by-tenant-v1' })
    this.partitionOf = options.partitionOf
    if (this.partitionOf) {
      this.inFlight = state.openDB<string, PartitionKey>({ name: 'runs-in-flight-v1', encoding: 'string' })
      this.byPartition = state.openDB<string, PartitionKey>({ name: 'runs-by-partition-v1', encoding: 'string' })
      this.offsets = state.openDB<number, number>({ name: 'run-partitions-v1' })
      this.holders = state.openDB<string, number>({ name: 'run-partition-holders-v1', encoding: 'string' })
    }
  }

  get (runId: string): RunRecord | undefined {
    const json = this.runs.get(runId)
    return json === undefined ? undefined : this.withLastEventId(JSON.parse(json) as RunRecord)
  }

  /** Bytes of the events of `tenant`'s ended runs that this store holds. */
  storedBytes (tenant: string): number {
    return this.tenantBytes.get(tenant) ?? 0
  }

  /**
   * Queues `event` for the next commit, with the run's new record and index
   * entries when it is a lifecycle event, in one transaction. Resolves once
   * committed; lmdb-js commits queued writes in call order, so the promises
   * of successive calls resolve in order, and writes queued while a commit
   * is in flight (any run's) go together into the next one.
   */
  append (runId: string, event: RunEvent): Promise<boolean> {
    if (event.record === undefined) return this.events.put([runId, event.id], event.json)
    // An end reads what the run wrote before it (queued, maybe not yet committed) to count it: a batch's reads do not see its writes.
    if (TERMINAL_EVENT_TYPES.has(event.type)) return this.state.transaction(() => { this.write(runId, event); return true })
    return this.state.batch(() => this.write(runId, event))
  }

  /**
   * Stores events of one partition as its log holds them, and the offset
   * after them, in one transaction: an event is stored only when it is the
   * next of its run (a repeat, or one after its run's end, is skipped), so
   * reading a stretch of the log twice changes nothing. Returns the events
   * stored.
   */
  async appendLogged (partition: number, nextOffset: number, logged: readonly LoggedEvent[]): Promise<LoggedEvent[]> {
    const added: LoggedEvent[] = []
    await this.state.transaction(() => {
      const ends = new Map<string, LogEnd>()
      for (const entry of logged) {
        const end = ends.get(entry.runId) ?? this.logEnd(entry.runId)
        if (end.terminal || entry.event.id !== end.id + 1) continue
        ends.set(entry.runId, { id: entry.event.id, terminal: TERMINAL_EVENT_TYPES.has(entry.event.type) })
        if (entry.event.record === undefined) this.events.put([entry.runId, entry.event.id], entry.event.json)
        else this.write(entry.runId, entry.event)
        added.push(entry)
      }
      this.offsets?.put(partition, nextOffset)
    })
    return added
  }

  /** The offset of the runs topic up to which this store holds `partition` (0: nothing of it). */
  partitionOffset (partition: number): number {
    return this.offsets?.get(partition) ?? 0
  }

  /** Which process of this DATA_DIR serves `partition` (its incarnation), or none (`undefined`). */
  async holdPartition (partition: number, holder: string | undefined, only?: string): Promise<void> {
    await this.state.transaction(() => {
      if (only !== undefined && this.holders!.get(partition) !== only) return
      if (holder === undefined) this.holders!.remove(partition)
      else this.holders!.put(partition, holder)
    })
  }

  /** The partitions this store holds runs of, each with the process of this DATA_DIR serving it, if any. */
  partitions (): Array<{ partition: number, holder: string | undefined }> {
    if (!this.offsets) return []
    return [...this.offsets.getKeys()].map(partition => ({ partition, holder: this.holders!.get(partition) }))
  }

  /** Runs of `partition` whose end is not stored: what a new owner of the partition must end or resume. */
  * inFlightOf (partition: number): Generator<string> {
    if (!this.inFlight) return
    for (const [, runId] of this.inFlight.getKeys({ start: [partition, ''], end: [partition + 1, ''] })) yield runId
  }

  /**
   * The record with `events`, the run's stored events after `afterId` in
   * order, as the origin's record has them, spliced in as the JSON they are
   * stored as. Past RECORD_EVENTS_BYTES of them the list ends and
   * `events_next` says where to go on from (`?events_after=`).
   */
  document (record: RunRecord, afterId = 0): string {
    const events: string[] = []
    let bytes = 0
    let next: number | undefined
    for (const e of this.eventsAfter(record.run_id, afterId)) {
      if (events.length > 0 && bytes + e.json.length > RECORD_EVENTS_BYTES) {
        next = e.id - 1
        break
      }
      events.push(e.json)
      bytes += e.json.length
    }
    const json = JSON.stringify(record)
    return `${json.slice(0, -1)},"events":[${events.join(',')}]${next === undefined ? '' : `,"events_next":${next}`}}`
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

  /**
   * Removes runs that ended before `cutoff` (ms), with their events and
   * index entries, except those `keep` holds; returns how many. Reads only
   * the end index, from its oldest entry up to the cutoff. Ends between
   * slices once `stop` is aborted.
   */
  async removeEndedBefore (cutoff: number, keep: (runId: string) => boolean = () => false, stop?: AbortSignal): Promise<number> {
    let removed = 0
    let from: EndKey = [0, '']
    while (stop?.aborted !== true) {
      const slice: Array<{ key: EndKey, tenant: string }> = []
      for (const { key, value } of this.ends.getRange({ start: from, end: [cutoff, ''] })) {
        from = [key[0], `${key[1]}\0`]
        if (keep(key[1])) continue
        slice.push({ key, tenant: value })
        if (slice.length === REMOVE_SLICE) break
      }
      if (slice.length === 0) return removed
      await this.state.transaction(() => {
        for (const { key, tenant } of slice) {
          this.ends.remove(key)
          this.removeRun(key[1], tenant, true)
          if (this.partitionOf) this.byPartition!.remove([this.partitionOf(key[1]), key[1]])
        }
      })
      removed += slice.length
      await new Promise(resolve => setImmediate(resolve))
    }
    return removed
  }

  /**
   * Forgets a partition (its next owner has it from the log): its offset
   * first, so whoever takes it up meanwhile reads it from the start, then
   * every run of it, a slice per transaction. With `unlessHeld`, it stops
   * as soon as a process of this DATA_DIR serves the partition.
   */
  async dropPartition (partition: number, unlessHeld = false): Promise<number> {
    if (!this.byPartition) return 0
    const held = (): boolean => unlessHeld && this.holders!.get(partition) !== undefined
    let dropped = 0
    let go = await this.state.transaction(() => {
      if (held()) return false
      this.offsets!.remove(partition)
      return true
    })
    while (go) {
      const ids = [...this.byPartition.getKeys({ start: [partition, ''], end: [partition + 1, ''], limit: REMOVE_SLICE })].map(([, runId]) => runId)
      if (ids.length === 0) break
      go = await this.state.transaction(() => {
        if (held()) return false
        for (const runId of ids) {
          const record = this.runs.get(runId)
          const tenant = record === undefined ? undefined : OWNER_OF_RECORD.exec(record)?.[1]
          const endedAt = record === undefined ? undefined : ENDED_OF_RECORD.exec(record)?.[1]
          if (endedAt !== undefined) this.ends.remove([Date.parse(endedAt), runId])
          this.removeRun(runId, tenant, endedAt !== undefined)
          this.inFlight!.remove([partition, runId])
          this.byPartition!.remove([partition, runId])
        }
        return true
      })
      if (go) dropped += ids.length
      await new Promise(resolve => setImmediate(resolve))
    }
    return dropped
  }

  /**
   * Fills the tenant and end indexes for runs stored before they existed,
   * once, in slices with the event loop free between them: call after the
   * gateway listens. A store whose indexes were built returns at once; one
   * stopped between slices by `stop` is built again at the next start.
   */
  async buildIndexes (stop?: AbortSignal): Promise<number> {
    if (this.meta.get(INDEXES_BUILT) !== undefined) return 0
    let built = 0
    let from = ''
    for (;;) {
      if (stop?.aborted === true) return built
      const slice = [...this.runs.getRange({ start: from, limit: REMOVE_SLICE })].filter(({ key }) => key !== from)
      if (slice.length === 0) break
      from = slice.at(-1)!.key
      await this.state.transaction(() => {
        for (const { key, value } of slice) {
          const record = JSON.parse(value) as RunRecord
          this.tenants.put([record.tenant_id, key], '')
          if (record.ended_at !== null && record.ended_at !== undefined) this.ends.put([Date.parse(record.ended_at), key], record.tenant_id)
        }
      })
      built += slice.length
      await new Promise(resolve => setImmediate(resolve))
    }
    await this.meta.put(INDEXES_BUILT, new Date().toISOString())
    return built
  }

  /** The writes of a lifecycle event (inside a transaction): the record, the event and the index entries it changes. */
  private write (runId: string, event: RunEvent): void {
    this.runs.put(runId, event.record!)
    this.events.put([runId, event.id], event.json)
    const partition = this.partitionOf?.(runId)
    if (event.id === 1) {
      this.tenants.put([eventTenant(event.json) ?? '', runId], '')
      if (partition !== undefined) this.byPartition!.put([partition, runId], '')
    }
    if (TERMINAL_EVENT_TYPES.has(event.type)) {
      const tenant = eventTenant(event.json) ?? ''
      this.ends.put([Date.parse(ENDED_OF_RECORD.exec(event.record!)?.[1] ?? ''), runId], tenant)
      this.count(tenant, this.runBytes(runId))
      if (partition !== undefined) this.inFlight!.remove([partition, runId])
    } else if (partition !== undefined) {
      this.inFlight!.put([partition, runId], '')
    }
  }

  /** A run's record, events and tenant entry (inside a transaction); an ended run's bytes leave its tenant's count. */
  private removeRun (runId: string, tenant: string | undefined, ended: boolean): void {
    this.runs.remove(runId)
    if (tenant !== undefined) this.tenants.remove([tenant, runId])
    if (tenant !== undefined && ended) this.count(tenant, -this.runBytes(runId))
    for (const key of this.events.getKeys({ start: [runId, 0], end: [runId, LAST] })) this.events.remove(key)
  }

  /** Bytes of a run's stored events (inside a transaction, its writes so far included). */
  private runBytes (runId: string): number {
    let bytes = 0
    for (const { value } of this.events.getRange({ start: [runId, 0], end: [runId, LAST] })) bytes += value.length
    return bytes
  }

  /** Adds `bytes` to the tenant's count (inside a transaction); a count never goes below nothing. */
  private count (tenant: string, bytes: number): void {
    const total = (this.tenantBytes.get(tenant) ?? 0) + bytes
    if (total > 0) this.tenantBytes.put(tenant, total)
    else this.tenantBytes.remove(tenant)
  }

  /** `record` with `last_event_id` set to the id of the run's newest stored event. */
  private withLastEventId (record: RunRecord): RunRecord {
    for (const [, id] of this.events.getKeys({ start: [record.run_id, LAST], end: [record.run_id, 0], reverse: true, limit: 1 })) record.last_event_id = id
    return record
  }
}

/** A stored record's tenant and end, read without parsing its (possibly large) message. */
const OWNER_OF_RECORD = /^\{"run_id":"(?:[^"\\]*)","tenant_id":"([^"\\]*)"/
const ENDED_OF_RECORD = /,"ended_at":"([^"]+)"/
