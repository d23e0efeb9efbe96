import type { Database } from 'lmdb'
import type { Logger } from 'pino'
import { transactionalLog, type Bus, type BusMessage, type TransactionalLog } from '../bus/index.js'
import { peerSignal } from '../ops/index.js'
import type { Owner, StateStore } from '../state/index.js'

interface OutboxEntry extends BusMessage {
  topic: string
  enqueued_at: number
}

/** (time of enqueue, counter): unique and increasing across every process sharing the environment. */
type Key = [number, number]

/** Envelopes per relay step: one bus call, one commit. */
export const RELAY_BATCH_MAX = 500
/**
 * Bytes per relay step: far below Kafka's default max.message.bytes (1 MiB
 * per partition's record batch), which a step must never exceed or it would
 * fail the same way forever.
 */
export const RELAY_BATCH_BYTES = 512 * 1024
/** Between looks at an empty outbox: entries committed by other processes on DATA_DIR wake no one here. */
const IDLE_MS = 1000
const MIN_BACKOFF_MS = 100
const MAX_BACKOFF_MS = 30_000
const RELAY_LEASE = 'relay'
/** How often `published` looks for an entry another process's relay may have taken, should a signal be missed. */
const PUBLISHED_POLL_MS = 1000
/** Between the workers sharing DATA_DIR: an entry was committed (wakes the relay), a relay step ended (wakes who waits). */
const ENQUEUED = peerSignal('evidence-outbox:enqueued')
const STEPPED = peerSignal('evidence-outbox:stepped')

interface Step { topic: string, keys: Key[], messages: BusMessage[] }

/**
 * The durable outbox: envelopes are written here in the same LMDB
 * transaction as their idempotency record, and a relay publishes them in
 * order, many per bus call, deleting them only once the bus has them. A bus
 * outage grows the backlog instead of losing events; a restart resumes it.
 *
 * Exactly once on the local bus: its log is in this LMDB environment, so
 * each step reads, appends and deletes in one transaction, which a crash
 * either commits whole or not at all (and which processes sharing DATA_DIR
 * take in turn). At least once on Kafka: a crash after the broker's
 * acknowledgment and before the delete publishes the step again on restart;
 * the `message-id` header lets consumers drop the copy. There one process per
 * DATA_DIR relays (a lease held by its incarnation, taken over when it dies),
 * so order per key holds across processes too.
 */
export class Outbox {
  private readonly db: Database<OutboxEntry, Key>
  private readonly meta: Database<string, string>
  private readonly log: TransactionalLog | undefined
  private wake: (() => void) | undefined
  private running: Promise<void> | undefined
  private stopped = false
  private backoff = MIN_BACKOFF_MS
  /** Relay steps that failed so far, and who waits for the next step to end (`published`). */
  private failures = 0
  private readonly stepped = new Set<() => void>()
  lastError: string | undefined

  constructor (private readonly state: StateStore, private readonly bus: Bus, private readonly logger: Logger, private readonly owner: Owner) {
    this.db = state.openDB<OutboxEntry, Key>({ name: 'evidence-outbox' })
    this.meta = state.openDB<string, string>({ name: 'evidence-outbox-meta' })
    this.log = transactionalLog(bus, state)
    ENQUEUED.on(() => this.wake?.())
    STEPPED.on(() => this.endStep(false))
  }

  /** Adds an entry; call inside a write transaction (it reads the last key to make the next). Its key, for `published`. */
  enqueueInTransaction (topic: string, message: BusMessage): Key {
    const now = Date.now()
    let key: Key = [now, 0]
    // A clock that steps back must not put a new entry before an older one.
    for (const last of this.db.getKeys({ reverse: true, limit: 1 })) if (last[0] >= now) key = [last[0], last[1] + 1]
    this.db.put(key, { ...message, topic, enqueued_at: now })
    return key
  }

  /**
   * Wakes the relay and waits until the entry `key` (committed) is on the
   * bus: true once it is, false at once when the bus is known to be down, as
   * soon as a relay step fails, or after `maxMs`; the entry then stays for
   * the relay. The relay of another process on DATA_DIR may hold the lease:
   * the entry's removal is looked for too.
   */
  async published (key: Key, maxMs: number): Promise<boolean> {
    const deadline = performance.now() + maxMs
    const failures = this.failures
    this.notify()
    while (this.db.doesExist(key)) {
      if (this.bus.unavailable() !== undefined || this.failures !== failures || performance.now() >= deadline) return false
      await new Promise<void>(resolve => {
        const timer = setTimeout(done, PUBLISHED_POLL_MS)
        this.stepped.add(done)
        function done (): void { clearTimeout(timer); resolve() }
      })
    }
    return true
  }

  get backlog (): number {
    return this.db.getCount()
  }

  /** Age in ms of the oldest unpublished entry, 0 when empty. */
  oldestAgeMs (): number {
    for (const { value } of this.db.getRange({ limit: 1 })) return Date.now() - value.enqueued_at
    return 0
  }

  start (): void {
    this.running ??= this.relay()
  }

  /** Wakes the relay after a commit, here or in the worker that holds its lease, so an event is published at once when the bus is up. */
  notify (): void {
    this.wake?.()
    ENQUEUED.send()
  }

  async stop (): Promise<void> {
    this.stopped = true
    this.wake?.()
    await this.running
    if (this.meta.get(RELAY_LEASE) === this.owner.id) await this.meta.remove(RELAY_LEASE)
  }

  private async relay (): Promise<void> {
    while (!this.stopped) {
      let sent: number
      try {
        sent = this.log ? await this.stepInTransaction(this.log) : await this.stepThenDelete()
        this.backoff = MIN_BACKOFF_MS
        this.lastError = undefined
        this.endStep(sent > 0)
      } catch (err) {
        this.lastError = (err as Error).message
        this.failures++
        this.endStep()
        this.logger.warn({ err: this.lastError, backlog: this.backlog, retryInMs: this.backoff }, 'outbox publish failed; will retry')
        await this.sleep(this.backoff)
        this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS)
        continue
      }
      if (sent === 0) await this.sleep(IDLE_MS)
    }
  }

  /** Local bus: read, append and delete one step in one transaction. */
  private async stepInTransaction (log: TransactionalLog): Promise<number> {
    // An idle relay looks every second: without a write transaction when there is nothing to take.
    if (this.backlog === 0) return 0
    let sent = 0
    await this.state.transaction(() => {
      for (const step of this.nextSteps()) {
        log.appendInTransaction(step.topic, step.messages)
        for (const key of step.keys) this.db.remove(key)
        sent += step.keys.length
      }
    })
    // Published and deleted in one commit: nothing to repeat after a crash.
    if (sent > 0) this.logger.debug({ envelopes: sent }, 'outbox step published')
    return sent
  }

  /** Any other bus: publish each step, then delete it. */
  private async stepThenDelete (): Promise<number> {
    if (this.backlog === 0 || !await this.lead()) return 0
    let sent = 0
    for (const step of this.nextSteps()) {
      await this.bus.publish(step.topic, step.messages)
      // Between the bus's acknowledgment and the delete a crash publishes the step again on restart (at least once).
      this.logger.debug({ topic: step.topic, envelopes: step.keys.length }, 'outbox step published')
      await this.state.transaction(() => { for (const key of step.keys) this.db.remove(key) })
      sent += step.keys.length
    }
    return sent
  }

  /**
   * The oldest entries, up to RELAY_BATCH_MAX and RELAY_BATCH_BYTES (at
   * least one), as runs of one topic each: one bus call per run, in order.
   */
  private nextSteps (): Step[] {
    const steps: Step[] = []
    let bytes = 0
    let count = 0
    for (const { key, value } of this.db.getRange({ limit: RELAY_BATCH_MAX })) {
      bytes += Buffer.byteLength(value.value) + Buffer.byteLength(value.key)
      if (count > 0 && bytes > RELAY_BATCH_BYTES) break
      count++
      let step = steps[steps.length - 1]
      if (step?.topic !== value.topic) steps.push(step = { topic: value.topic, keys: [], messages: [] })
      step.keys.push(key)
      step.messages.push({ key: value.key, value: value.value, headers: value.headers })
    }
    return steps
  }

  /** True when this process holds the relay lease, taking it from a holder that is gone. */
  private async lead (): Promise<boolean> {
    if (this.meta.get(RELAY_LEASE) === this.owner.id) return true
    let mine = false
    await this.state.transaction(() => {
      const holder = this.meta.get(RELAY_LEASE)
      mine = holder === undefined || holder === this.owner.id || !this.owner.isAlive(holder)
      if (mine) this.meta.put(RELAY_LEASE, this.owner.id)
    })
    return mine
  }

  /** Wakes who waits for a step (`published`); `tell`: and the other workers' waiters, for an entry of theirs this relay took. */
  private endStep (tell = true): void {
    for (const done of this.stepped) done()
    this.stepped.clear()
    if (tell) STEPPED.send()
  }

  private sleep (ms: number): Promise<void> {
    return new Promise(resolve => {
      const timer = setTimeout(done, ms)
      function done (): void { clearTimeout(timer); resolve() }
      this.wake = () => { this.wake = undefined; done() }
    })
  }
}
