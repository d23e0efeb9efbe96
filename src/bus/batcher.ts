import type { OutgoingMessage } from './types.js'
import { GatewayError } from '../errors.js'

export interface BatcherOptions {
  /** Records per send. */
  maxBatch: number
  /** Longest wait before a partial batch leaves. */
  lingerMs: number
  /** Records waiting or in flight before new ones are refused (503). */
  maxPending: number
  /**
   * Batches sent before the first is acknowledged (default 1). More than one
   * only for a publish that keeps the order of overlapping calls itself (the
   * local bus: LMDB runs its transactions in the order they were asked for).
   */
  maxInFlight?: number
  /** From a record's arrival to its answer; past it the record fails (500). */
  timeoutMs: number
  publish: (messages: OutgoingMessage[]) => Promise<void>
  /**
   * An error when sending is known to be futile now (the bus is down):
   * records are then failed with it at once, when they arrive and when their
   * batch would leave, instead of waiting for the deadline.
   */
  refuse?: () => GatewayError | undefined
  /**
   * True for a token whose sender is gone (a client that left). Its record,
   * still queued when its batch leaves, is dropped unsent (the retry a
   * client makes after giving up would publish it a second time) and told
   * as failed: nobody reads that answer, but whoever handed the record in
   * learns it is done with (the HTTP server counts a handler as running, and
   * a shutdown waits for it, until it is told).
   */
  abandoned?: (token: unknown) => boolean
}

/** Told once per record: `err` is undefined when its batch was acknowledged. */
export type Settled<T> = (token: T, err: GatewayError | undefined, message: OutgoingMessage) => void

interface Entry {
  message: OutgoingMessage
  /**
   * On `performance.now()`'s clock, as is every time here: deadlines and
   * lingers are durations, and a wall clock set back (NTP, an operator)
   * would stretch them by the step.
   */
  deadline: number
  settled: boolean
  token: unknown
  done: Settled<any>
}

const settlePromise: Settled<{ resolve: () => void, reject: (err: GatewayError) => void }> = (p, err) => { if (err) p.reject(err); else p.resolve() }
const reportFailure: Settled<(err: GatewayError, message: OutgoingMessage) => void> = (failed, err, message) => { if (err) failed(err, message) }

/**
 * Groups records into batches and answers each record when its batch is
 * acknowledged. Up to `maxInFlight` batches (one by default) are in flight;
 * records that arrive meanwhile form the next one, so the batch size follows
 * the load. With more than one, a batch leaves (after the linger) while the
 * ones before it wait for their acknowledgment, so a record waits for its own
 * batch's acknowledgment rather than for one more before it: what an LMDB
 * commit that waits for the disk's flush needs (docs/telemetry.md).
 * Every record settles exactly once: acknowledged, failed, or timed out.
 */
export class MicroBatcher {
  private queue: Entry[] = []
  private readonly inFlight: Entry[][] = []
  private inFlightRecords = 0
  private readonly maxInFlight: number
  private lingerTimer: NodeJS.Timeout | undefined
  private deadlineTimer: NodeJS.Timeout | undefined
  private deadlineAt = Infinity

  constructor (private readonly options: BatcherOptions) {
    this.maxInFlight = Math.max(1, options.maxInFlight ?? 1)
  }

  get pending (): number {
    return this.queue.length + this.inFlightRecords
  }

  private get full (): boolean {
    return this.inFlight.length >= this.maxInFlight
  }

  add (message: OutgoingMessage): Promise<void> {
    const refused = this.refused()
    if (refused) return Promise.reject(refused)
    return new Promise((resolve, reject) => { this.enqueue(message, { resolve, reject }, settlePromise) })
  }

  /**
   * `add` for a sender that does not wait for the acknowledgment: no promise
   * per record, and `failed` is called (at most once) when the record is refused,
   * fails or times out.
   */
  push (message: OutgoingMessage, failed: (err: GatewayError, message: OutgoingMessage) => void): void {
    const refused = this.refused()
    if (refused) failed(refused, message)
    else this.enqueue(message, failed, reportFailure)
  }

  /**
   * `add` without a promise or closure per record: `settled(token, err)` is
   * called once, when the record's batch is acknowledged (err undefined),
   * fails or times out, or when the record is dropped because its sender
   * left, and it can be one function shared by every record.
   * A record refused at once (overload, the bus known down) is not queued:
   * the refusal is returned and `settled` is never called.
   */
  submit<T> (message: OutgoingMessage, token: T, settled: Settled<T>): GatewayError | undefined {
    const refused = this.refused()
    if (refused) return refused
    this.enqueue(message, token, settled)
    return undefined
  }

  /**
   * `submit` for records that are admitted together or not at all (one
   * request's records): refused whole when the bus is known down or when
   * they would take the pending records past `maxPending`, and then nothing
   * is queued. `tokens[i]` is `messages[i]`'s.
   */
  submitAll<T> (messages: readonly OutgoingMessage[], tokens: readonly T[], settled: Settled<T>): GatewayError | undefined {
    const refused = this.options.refuse?.() ?? (this.pending + messages.length > this.options.maxPending ? this.overloaded() : undefined)
    if (refused) return refused
    for (let i = 0; i < messages.length; i++) this.enqueue(messages[i]!, tokens[i], settled)
    return undefined
  }

  private refused (): GatewayError | undefined {
    return this.options.refuse?.() ?? (this.pending >= this.options.maxPending ? this.overloaded() : undefined)
  }

  private enqueue (message: OutgoingMessage, token: unknown, done: Settled<any>): void {
    const entry: Entry = { message, deadline: performance.now() + this.options.timeoutMs, settled: false, token, done }
    this.queue.push(entry)
    this.armDeadline(entry.deadline)
    if (this.full) return
    if (this.queue.length >= this.options.maxBatch) this.flush()
    else this.lingerTimer ??= setTimeout(() => this.flush(), this.options.lingerMs)
  }

  private overloaded (): GatewayError {
    return new GatewayError('overloaded', 'Too many records pending; retry later', {
      headers: { 'retry-after': '1' },
      details: { detail: `${this.pending} records awaiting acknowledgment` }
    })
  }

  /** Sends what is queued and resolves when nothing is pending (shutdown). */
  async drain (): Promise<void> {
    while (this.pending > 0) {
      if (!this.full) this.flush()
      await new Promise(resolve => setImmediate(resolve))
    }
  }

  private flush (): void {
    clearTimeout(this.lingerTimer)
    this.lingerTimer = undefined
    if (this.full || this.queue.length === 0) return
    const batch = this.take()
    if (batch.length === 0) return
    this.inFlight.push(batch)
    this.inFlightRecords += batch.length
    const refused = this.options.refuse?.()
    if (refused) return this.settle(batch, refused)
    this.options.publish(batch.map(e => e.message)).then(
      () => this.settle(batch, undefined),
      err => this.settle(batch, publishFailed((err as Error).message ?? String(err)))
    )
  }

  /** The head of the queue, up to maxBatch records, passing over those whose sender is gone (dropped, and told so). */
  private take (): Entry[] {
    const abandoned = this.options.abandoned
    const batch: Entry[] = []
    let i = 0
    for (; i < this.queue.length && batch.length < this.options.maxBatch; i++) {
      const e = this.queue[i]!
      if (abandoned?.(e.token) !== true) batch.push(e)
      else {
        e.settled = true
        e.done(e.token, SENDER_GONE, e.message)
      }
    }
    this.queue = i === this.queue.length ? [] : this.queue.slice(i)
    return batch
  }

  private settle (batch: Entry[], err: GatewayError | undefined): void {
    for (const e of batch) {
      if (e.settled) continue
      e.settled = true
      e.done(e.token, err, e.message)
    }
    this.inFlight.splice(this.inFlight.indexOf(batch), 1)
    this.inFlightRecords -= batch.length
    if (this.queue.length > 0) this.next()
    else if (this.inFlight.length === 0) this.disarmDeadline()
  }

  /**
   * What queued behind an acknowledged batch. With one batch in flight (a
   * Kafka producer), it leaves once it is a full batch or its oldest record
   * has lingered `lingerMs`, as `linger.ms` has it: sent at once after each
   * acknowledgment, a batch at a moderate rate carried a dozen records, and
   * a send's fixed cost (mostly the socket write) was shared by that few.
   * With several in flight (the local bus, whose wait is the disk's flush),
   * the freed slot takes it at once: the window already gathered it.
   */
  private next (): void {
    if (this.maxInFlight > 1 || this.queue.length >= this.options.maxBatch) return this.flush()
    // A record's arrival is its deadline less the timeout.
    const wait = this.queue[0]!.deadline - this.options.timeoutMs + this.options.lingerMs - performance.now()
    if (wait <= 0) return this.flush()
    this.lingerTimer ??= setTimeout(() => this.flush(), wait)
  }

  private armDeadline (deadline: number): void {
    if (deadline >= this.deadlineAt) return
    clearTimeout(this.deadlineTimer)
    this.deadlineAt = deadline
    this.deadlineTimer = setTimeout(() => this.expire(), Math.max(0, deadline - performance.now()))
  }

  private disarmDeadline (): void {
    clearTimeout(this.deadlineTimer)
    this.deadlineAt = Infinity
  }

  /** Fails every record past its deadline, in flight or queued; the oldest come first. */
  private expire (): void {
    this.deadlineAt = Infinity
    const now = performance.now()
    const timeout = publishFailed(`no acknowledgment within ${this.options.timeoutMs} ms`)
    for (const batch of this.inFlight) {
      for (const e of batch) {
        if (!e.settled && e.deadline <= now) { e.settled = true; e.done(e.token, timeout, e.message) }
      }
    }
    let expired = 0
    while (expired < this.queue.length && this.queue[expired]!.deadline <= now) {
      const e = this.queue[expired++]!
      e.settled = true
      e.done(e.token, timeout, e.message)
    }
    if (expired > 0) this.queue = this.queue.slice(expired)
    let next = this.queue[0]?.deadline ?? Infinity
    for (const batch of this.inFlight) next = Math.min(next, batch.find(e => !e.settled)?.deadline ?? Infinity)
    if (next !== Infinity) this.armDeadline(next)
  }
}

const SENDER_GONE = publishFailed('not sent: its sender left while it was queued')

function publishFailed (detail: string): GatewayError {
  return new GatewayError('publish_failed', 'Failed to publish message', { details: { detail } })
}
