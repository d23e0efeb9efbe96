import type { Database } from 'lmdb'
import type { Logger } from 'pino'
import type { Bus, BusMessage } from '../bus/index.js'
import type { StateStore } from '../state/index.js'

interface OutboxEntry extends BusMessage {
  topic: string
  enqueued_at: number
}

type Key = [number, number]

const BATCH = 100
const MIN_BACKOFF_MS = 100
const MAX_BACKOFF_MS = 30_000

/**
 * The durable outbox: envelopes are written here in the same LMDB
 * transaction as their idempotency record, and a relay publishes them in
 * order, deleting each only after the bus acknowledged it. A bus outage
 * grows the backlog instead of losing events; a restart resumes from it.
 */
export class Outbox {
  private readonly db: Database<OutboxEntry, Key>
  private seq = 0
  private wake: (() => void) | undefined
  private running: Promise<void> | undefined
  private stopped = false
  private backoff = MIN_BACKOFF_MS
  lastError: string | undefined

  constructor (state: StateStore, private readonly bus: Bus, private readonly log: Logger) {
    this.db = state.openDB<OutboxEntry, Key>({ name: 'evidence-outbox' })
  }

  /** Adds an entry; call inside a write transaction. Keys sort by time, then by a process-local counter. */
  enqueueInTransaction (topic: string, message: BusMessage): void {
    const now = Date.now()
    this.db.put([now, this.seq++], { ...message, topic, enqueued_at: now })
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

  /** Wakes the relay after a commit, so an event is published at once when the bus is up. */
  notify (): void {
    this.wake?.()
  }

  async stop (): Promise<void> {
    this.stopped = true
    this.wake?.()
    await this.running
  }

  private async relay (): Promise<void> {
    while (!this.stopped) {
      const batch = [...this.db.getRange({ limit: BATCH })]
      if (batch.length === 0) {
        await this.sleep(60_000)
        continue
      }
      try {
        for (const { key, value } of batch) {
          await this.bus.publish(value.topic, [{ key: value.key, value: value.value, headers: value.headers }])
          await this.db.remove(key)
        }
        this.backoff = MIN_BACKOFF_MS
        this.lastError = undefined
      } catch (err) {
        this.lastError = (err as Error).message
        this.log.warn({ err: this.lastError, backlog: this.backlog, retryInMs: this.backoff }, 'outbox publish failed; will retry')
        await this.sleep(this.backoff)
        this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS)
      }
    }
  }

  private sleep (ms: number): Promise<void> {
    return new Promise(resolve => {
      const timer = setTimeout(done, ms)
      function done (): void { clearTimeout(timer); resolve() }
      this.wake = () => { this.wake = undefined; done() }
    })
  }
}
