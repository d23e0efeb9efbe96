import type { Database } from 'lmdb'
import type { Logger } from 'pino'
import type { BusMessage } from '../bus/index.js'
import type { Owner, StateStore } from '../state/index.js'
import type { RunStore } from './store.js'
import type { RunEvent } from './types.js'

export interface OutboxOptions {
  /** Events per bus publish. */
  maxBatch: number
  /** Longest wait before a partial batch leaves. */
  lingerMs: number
  /** Resolves when the bus has the messages (acks = all, or the local log's commit). */
  publish: (messages: BusMessage[]) => Promise<void>
  /** The bus's readiness probe: tells a message the bus refuses from a bus that is away. */
  probe?: () => Promise<void>
  log: Logger
  /** This process (whose runs it relays), and whether the holder of another run still lives. */
  owner: Owner
  /** Runs held in memory; past it new runs are spilled to a marker and read back from LMDB later. */
  maxTrackedRuns?: number
  /** Events queued in memory; past it a run's further events are read back from its log when their turn comes. */
  maxQueuedEvents?: number
}

/** What the relay knows of a run that has events not yet acknowledged, or may still have some. */
interface Tracked {
  runId: string
  createdAt: number
  headers: Record<string, string>
  /** Highest id the bus acknowledged. */
  acked: number
  /** Highest id queued in memory (or sent). */
  queued: number
  /** Highest id committed to the log. */
  stored: number
  /** Id of the run's terminal event once it is stored, else 0. */
  terminal: number
  /** The run's published-through marker in LMDB, -1 when it has none. */
  marker: number
  /** Callers of `published` waiting for an id to be acknowledged. */
  waiters?: Array<{ id: number, done: () => void }>
}

interface Entry { run: Tracked, event: RunEvent }

const MAX_TRACKED_RUNS = 10_000
const MAX_QUEUED_EVENTS = 50_000
/** A batch stops growing here, so many events share a request (and a Kafka record batch) only while they are small. */
const MAX_BATCH_BYTES = 256 * 1024
/** A large event refused alone this many times while the bus answers its probe is one the bus will never take. */
const REFUSALS_TO_DROP = 3
const CHECKPOINT_MS = 250
/** A run pending this long gets a marker; runs that end sooner (nearly all) never write one. */
const MARKER_AFTER_MS = 1000
/** A marker is moved forward once this many more events of its run are acknowledged. */
const MARKER_STRIDE = 100
const MIN_BACKOFF_MS = 100
const MAX_BACKOFF_MS = 5000
const SCHEMA = 'run-event@2'

/**
 * The run-event log is the outbox of `TOPIC_RUNS`: an event is published only
 * after it is committed to its run's log, in order per run, in batches, and
 * retried until the bus acknowledges it. Nothing extra is written per event.
 *
 * Each process relays the runs it owns (`run-owners`, run_id → incarnation,
 * written when the run is created and removed once its end is acknowledged),
 * so several processes may share DATA_DIR and each run still has one relay
 * at a time. What has to survive a crash is which events are not yet
 * acknowledged: the owner entry says the run has some, and a run's marker
 * (`run-outbox`, run_id → acknowledged-through id), written for a run pending
 * longer than MARKER_AFTER_MS, from where. A process that finds runs owned by
 * a dead incarnation (`claim`, at start and every few seconds) takes them
 * over in one transaction, so one process only, and republishes each from
 * its marker, or from its start: at least once, never a gap
 * (docs/harness.md, Durability of run events).
 */
export class RunOutbox {
  private readonly db: Database<number, string>
  private readonly owners: Database<string, string>
  private readonly maxTracked: number
  private readonly maxQueued: number
  private readonly tracked = new Map<string, Tracked>()
  private queue: Entry[] = []
  /** Runs with stored events not queued in memory, in the order they fell behind. */
  private readonly behind = new Set<Tracked>()
  private inFlight: Entry[] | undefined
  private timer: NodeJS.Timeout | undefined
  private checkpoints: NodeJS.Timeout | undefined
  private backoff = MIN_BACKOFF_MS
  /** Markers of runs not in memory may be waiting in `run-outbox`; scanning resumes after `spillCursor`. */
  private spilled = false
  private spillCursor = ''
  private stopped = false
  private idle: (() => void) | undefined
  private refusals = 0
  /** Events committed and not yet acknowledged. */
  waiting = 0
  /** Events the bus would never take (see `failed`), skipped. */
  dropped = 0
  lastError: string | undefined

  constructor (private readonly state: StateStore, private readonly store: RunStore, private readonly options: OutboxOptions) {
    this.db = state.openDB<number, string>({ name: 'run-outbox' })
    this.owners = state.openDB<string, string>({ name: 'run-owners', encoding: 'string' })
    this.maxTracked = options.maxTrackedRuns ?? MAX_TRACKED_RUNS
    this.maxQueued = options.maxQueuedEvents ?? MAX_QUEUED_EVENTS
  }

  /**
   * Takes over, in one transaction (so no other process takes the same),
   * the runs owned by incarnations that are gone: they may have events not
   * yet acknowledged, or still be in flight. End those in flight, then hand
   * them to `start` or `adopt`.
   */
  async claim (): Promise<string[]> {
    const self = this.options.owner
    const claimed: string[] = []
    // Asked once per incarnation: a live sibling may own thousands of pending runs.
    const alive = new Map<string, boolean>([[self.id, true]])
    await this.state.transaction(() => {
      for (const { key, value } of this.owners.getRange()) {
        let lives = alive.get(value)
        if (lives === undefined) alive.set(value, lives = self.isAlive(value))
        if (lives) continue
        this.owners.put(key, self.id)
        claimed.push(key)
      }
    })
    return claimed
  }

  /** Starts relaying, first the runs `claim` took over (call after their ends are in their logs). */
  start (claimed: readonly string[]): void {
    this.adopt(claimed)
    this.checkpoints = setInterval(() => this.checkpoint(), CHECKPOINT_MS).unref()
    this.options.log.info({ runs: this.tracked.size, events: this.waiting }, 'run events left unpublished at the last stop are being published')
  }

  /** Publishes what is left of runs `claim` took over: each from its marker, or from its start. */
  adopt (claimed: readonly string[]): void {
    for (const runId of claimed) {
      if (this.tracked.has(runId)) continue
      const marker = this.db.get(runId)
      this.resume(runId, marker ?? 0, marker !== undefined, true)
    }
    this.flush()
  }

  /** A new run: its events will follow, in order. */
  track (runId: string, tenantId: string, createdAt: number): void {
    // Queued before the run's first event, so it commits with it or before.
    this.owners.put(runId, this.options.owner.id)
    if (this.tracked.size >= this.maxTracked) {
      this.db.put(runId, 0)
      this.spilled = true
      return
    }
    this.tracked.set(runId, { runId, createdAt, headers: { 'client-id': tenantId, schema: SCHEMA, owner: this.options.owner.id }, acked: 0, queued: 0, stored: 0, terminal: 0, marker: -1 })
  }

  /** An event of a tracked run, committed to its log; events of a run come in order. */
  add (runId: string, event: RunEvent, terminal: boolean): void {
    this.waiting++
    const run = this.tracked.get(runId)
    if (!run) return
    if (event.id > run.stored) run.stored = event.id
    if (terminal) run.terminal = event.id
    if (!this.behind.has(run) && run.queued === event.id - 1 && this.queue.length < this.maxQueued) {
      this.queue.push({ run, event })
      run.queued = event.id
    } else {
      this.behind.add(run)
    }
    if (this.inFlight) return
    if (this.queue.length >= this.options.maxBatch) this.flush()
    else this.timer ??= setTimeout(() => this.flush(), this.options.lingerMs)
  }

  /**
   * Resolves once the bus acknowledged the run's events through `id`, or
   * after `timeoutMs` (a bus that is away: the events stay queued). A run not
   * held in memory (spilled under load) is not waited for.
   */
  published (runId: string, id: number, timeoutMs: number): Promise<void> {
    const run = this.tracked.get(runId)
    if (!run || run.acked >= id || this.stopped) return Promise.resolve()
    return new Promise(resolve => {
      const timer = setTimeout(done, timeoutMs)
      function done (): void {
        clearTimeout(timer)
        resolve()
      }
      (run.waiters ??= []).push({ id, done })
    })
  }

  /** Whether a run still has events to publish (retention keeps it). */
  holds (runId: string): boolean {
    return this.owners.get(runId) !== undefined
  }

  /**
   * Shutdown: publishes what it can within `timeoutMs`, then records what is
   * left (markers for every pending run) so that whoever claims these runs
   * next publishes it, and nothing else.
   */
  async stop (timeoutMs: number): Promise<void> {
    if (this.waiting > 0) {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([
        new Promise<void>(resolve => { this.idle = resolve }),
        new Promise<void>(resolve => { timer = setTimeout(resolve, timeoutMs) })
      ])
      clearTimeout(timer)
    }
    this.stopped = true
    clearTimeout(this.timer)
    clearInterval(this.checkpoints)
    const writes = [...this.tracked.values()].filter(run => run.marker !== run.acked).map(run => this.db.put(run.runId, run.acked))
    await Promise.all(writes)
  }

  /**
   * Takes a run this process owns back into memory (a claimed run, or one
   * spilled to its marker), marked, or lets it go when everything of it was
   * acknowledged (false). `counted`: its events are not yet in `waiting`.
   */
  private resume (runId: string, acked: number, marked: boolean, counted: boolean): boolean {
    const end = this.store.logEnd(runId)
    if (end.terminal && acked >= end.id) {
      if (marked) this.db.remove(runId)
      this.owners.remove(runId)
      return false
    }
    if (counted) this.waiting += Math.max(0, end.id - acked)
    if (!marked) this.db.put(runId, acked)
    if (this.tracked.size >= this.maxTracked) {
      this.spilled = true
      return true
    }
    const tenant = this.store.get(runId)?.tenant_id ?? ''
    const run: Tracked = { runId, createdAt: 0, headers: { 'client-id': tenant, schema: SCHEMA, owner: this.options.owner.id }, acked, queued: acked, stored: end.id, terminal: end.terminal ? end.id : 0, marker: acked }
    this.tracked.set(runId, run)
    if (run.stored > run.queued) this.behind.add(run)
    return true
  }

  private flush (): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.inFlight || this.stopped) return
    if (this.queue.length === 0) this.refill()
    if (this.queue.length === 0) return
    let size = 0
    let bytes = 0
    const max = Math.min(this.queue.length, this.options.maxBatch)
    while (size < max && (size === 0 || bytes < MAX_BATCH_BYTES)) bytes += this.queue[size++]!.event.json.length
    const batch = size === this.queue.length ? this.queue : this.queue.slice(0, size)
    this.queue = batch === this.queue ? [] : this.queue.slice(size)
    this.inFlight = batch
    this.send(batch)
  }

  private send (batch: Entry[]): void {
    const messages = batch.map(({ run, event }) => ({ key: run.runId, value: event.json, headers: run.headers }))
    this.options.publish(messages).then(() => this.acknowledged(batch), err => this.failed(batch, err as Error))
  }

  private acknowledged (batch: Entry[]): void {
    for (const { run, event } of batch) {
      run.acked = event.id
      if (run.waiters) this.wake(run)
      if (run.acked === run.terminal && this.tracked.get(run.runId) === run) {
        this.tracked.delete(run.runId)
        this.behind.delete(run)
        if (run.marker >= 0) this.db.remove(run.runId)
        this.owners.remove(run.runId)
      }
    }
    this.waiting -= batch.length
    this.inFlight = undefined
    this.backoff = MIN_BACKOFF_MS
    this.refusals = 0
    if (this.lastError !== undefined) this.options.log.info({ waiting: this.waiting }, 'run events are being published again')
    this.lastError = undefined
    if (this.spilled && this.tracked.size < this.maxTracked * 0.9) this.load()
    if (this.queue.length > 0 || this.behind.size > 0) this.flush()
    else if (this.waiting === 0) this.idle?.()
  }

  private wake (run: Tracked): void {
    const waiting = run.waiters!.filter(w => w.id > run.acked)
    for (const w of run.waiters!) if (w.id <= run.acked) w.done()
    run.waiters = waiting.length > 0 ? waiting : undefined
  }

  /**
   * A batch the bus did not take is retried, halved each time (the rest goes
   * back to the head of the queue), so one event the bus refuses is soon sent
   * alone. An event past MAX_BATCH_BYTES (a record holding a 64 KiB message
   * of control characters three times is over a megabyte: past Kafka's
   * default limit) refused alone REFUSALS_TO_DROP times while the bus answers
   * its probe would block every run's events for good: it is skipped, logged
   * with its run and seq, and counted. Nothing is skipped while the bus fails
   * its probe, nor for a smaller event, whatever the error (an outage, a
   * leader election or a missing ACL refuses every event alike).
   */
  private failed (batch: Entry[], err: Error): void {
    if (this.lastError === undefined) this.options.log.warn({ err: err.message, waiting: this.waiting }, 'run events not published; retrying until the bus takes them')
    this.lastError = err.message
    if (this.stopped) return
    let retry = batch
    if (batch.length > 1) {
      retry = batch.slice(0, batch.length >> 1)
      this.queue = [...batch.slice(retry.length), ...this.queue]
      this.inFlight = retry
    } else if (++this.refusals >= REFUSALS_TO_DROP && this.options.probe && batch[0]!.event.json.length > MAX_BATCH_BYTES) {
      this.options.probe().then(() => this.drop(batch[0]!, err), () => undefined).finally(() => this.retry(retry))
      return
    }
    this.retry(retry)
  }

  private retry (batch: Entry[]): void {
    if (this.stopped || this.inFlight !== batch) return
    this.timer = setTimeout(() => { this.timer = undefined; this.send(batch) }, this.backoff)
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS)
  }

  private drop (entry: Entry, err: Error): void {
    this.dropped++
    this.options.log.error({ err: err.message, runId: entry.run.runId, seq: entry.event.id, bytes: entry.event.json.length }, 'the bus refuses a run event while it takes others; it is skipped')
    this.acknowledged([entry])
  }

  /** Queues, from their logs, the events of runs that fell behind, up to one batch. */
  private refill (): void {
    for (const run of this.behind) {
      for (const event of this.store.eventsAfter(run.runId, run.queued, this.options.maxBatch - this.queue.length)) {
        this.queue.push({ run, event })
        run.queued = event.id
      }
      if (run.queued >= run.stored) this.behind.delete(run)
      if (this.queue.length >= this.options.maxBatch) return
    }
  }

  /** Takes spilled runs back into memory from their markers, in creation order, while there is room. */
  private load (): void {
    for (const { key, value } of this.db.getRange({ start: this.spillCursor })) {
      if (this.tracked.size >= this.maxTracked * 0.9) return
      this.spillCursor = key
      if (!this.tracked.has(key) && this.owners.get(key) === this.options.owner.id) this.resume(key, value, true, false)
    }
    this.spilled = false
    this.spillCursor = ''
  }

  /**
   * Marks every run pending longer than MARKER_AFTER_MS and moves markers of
   * long runs forward, so a takeover republishes less; a run without one is
   * republished from its start.
   */
  private checkpoint (): void {
    const horizon = Date.now() - MARKER_AFTER_MS
    for (const run of this.tracked.values()) {
      if (run.marker < 0 ? run.createdAt < horizon : run.acked - run.marker >= MARKER_STRIDE) {
        this.db.put(run.runId, run.acked)
        run.marker = run.acked
      }
    }
  }
}
