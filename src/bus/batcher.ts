import type { BusMessage } from './types.js'
import { GatewayError } from '../errors.js'

export interface BatcherOptions {
  /** Records per send. */
  maxBatch: number
  /** Longest wait before a partial batch leaves. */
  lingerMs: number
  /** Records waiting or in flight before new ones are refused (503). */
  maxPending: number
  /** From a record's arrival to its answer; past it the record fails (500). */
  timeoutMs: number
  publish: (messages: BusMessage[]) => Promise<void>
  /**
   * An error when sending is known to be futile now (the bus is down):
   * records are then failed with it at once, when they arrive and when their
   * batch would leave, instead of waiting for the deadline.
   */
  refuse?: () => GatewayError | undefined
}

interface Entry {
  message: BusMessage
  deadline: number
  settled: boolean
  resolve: () => void
  reject: (err: GatewayError, message: BusMessage) => void
}

const NOTHING = (): void => {}

/**
 * Groups records into batches and answers each record when its batch is
 * acknowledged. One batch is in flight at a time; records that arrive
 * meanwhile form the next one, so the batch size follows the load.
 * Every record settles exactly once: acknowledged, failed, or timed out.
 */
export class MicroBatcher {
  private queue: Entry[] = []
  private inFlight: Entry[] | undefined
  private lingerTimer: NodeJS.Timeout | undefined
  private deadlineTimer: NodeJS.Timeout | undefined
  private deadlineAt = Infinity

  constructor (private readonly options: BatcherOptions) {}

  get pending (): number {
    return this.queue.length + (this.inFlight?.length ?? 0)
  }

  add (message: BusMessage): Promise<void> {
    const refused = this.refused()
    if (refused) return Promise.reject(refused)
    return new Promise((resolve, reject) => { this.enqueue(message, resolve, reject) })
  }

  /**
   * `add` for a sender that does not wait for the acknowledgment: no promise
   * per record, and `failed` is called (at most once) when the record is refused,
   * fails or times out.
   */
  push (message: BusMessage, failed: (err: GatewayError, message: BusMessage) => void): void {
    const refused = this.refused()
    if (refused) failed(refused, message)
    else this.enqueue(message, NOTHING, failed)
  }

  private refused (): GatewayError | undefined {
    return this.options.refuse?.() ?? (this.pending >= this.options.maxPending ? this.overloaded() : undefined)
  }

  private enqueue (message: BusMessage, resolve: Entry['resolve'], reject: Entry['reject']): void {
    const entry: Entry = { message, deadline: Date.now() + this.options.timeoutMs, settled: false, resolve, reject }
    this.queue.push(entry)
    this.armDeadline(entry.deadline)
    if (this.inFlight) return
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
      if (!this.inFlight) this.flush()
      await new Promise(resolve => setImmediate(resolve))
    }
  }

  private flush (): void {
    clearTimeout(this.lingerTimer)
    this.lingerTimer = undefined
    if (this.inFlight || this.queue.length === 0) return
    const batch = this.queue.length <= this.options.maxBatch ? this.queue : this.queue.slice(0, this.options.maxBatch)
    this.queue = batch === this.queue ? [] : this.queue.slice(batch.length)
    this.inFlight = batch
    const refused = this.options.refuse?.()
    if (refused) return this.settle(batch, refused)
    this.options.publish(batch.map(e => e.message)).then(
      () => this.settle(batch, undefined),
      err => this.settle(batch, publishFailed((err as Error).message ?? String(err)))
    )
  }

  private settle (batch: Entry[], err: GatewayError | undefined): void {
    for (const e of batch) {
      if (e.settled) continue
      e.settled = true
      if (err) e.reject(err, e.message)
      else e.resolve()
    }
    this.inFlight = undefined
    // Records that queued behind this batch have waited long enough already.
    if (this.queue.length > 0) this.flush()
    else this.disarmDeadline()
  }

  private armDeadline (deadline: number): void {
    if (deadline >= this.deadlineAt) return
    clearTimeout(this.deadlineTimer)
    this.deadlineAt = deadline
    this.deadlineTimer = setTimeout(() => this.expire(), Math.max(0, deadline - Date.now()))
  }

  private disarmDeadline (): void {
    clearTimeout(this.deadlineTimer)
    this.deadlineAt = Infinity
  }

  /** Fails every record past its deadline, in flight or queued; the oldest come first. */
  private expire (): void {
    this.deadlineAt = Infinity
    const now = Date.now()
    const timeout = publishFailed(`no acknowledgment within ${this.options.timeoutMs} ms`)
    for (const e of this.inFlight ?? []) {
      if (!e.settled && e.deadline <= now) { e.settled = true; e.reject(timeout, e.message) }
    }
    let expired = 0
    while (expired < this.queue.length && this.queue[expired]!.deadline <= now) {
      const e = this.queue[expired++]!
      e.settled = true
      e.reject(timeout, e.message)
    }
    if (expired > 0) this.queue = this.queue.slice(expired)
    const next = Math.min(this.inFlight?.find(e => !e.settled)?.deadline ?? Infinity, this.queue[0]?.deadline ?? Infinity)
    if (next !== Infinity) this.armDeadline(next)
  }
}

function publishFailed (detail: string): GatewayError {
  return new GatewayError('publish_failed', 'Failed to publish message', { details: { detail } })
}
