import type { Database } from 'lmdb'
import type { StateStore } from '../state/index.js'
import { joined, type BusMessage, type FollowableBus, type OutgoingMessage, type StoredMessage, type Subscription, type SubscribeOptions, type TransactionalLog } from './types.js'

/** (topic, offset of the batch's last message) */
type Key = [string, number]
type Entry = [key: string, value: string | Buffer, headers: Record<string, string>]
interface Batch { timestamp: number, messages: Entry[] }

const LAST = Number.MAX_SAFE_INTEGER
/** How often a subscription looks for messages other processes appended. */
const POLL_MS = 50
/** Messages handed to a subscriber at a time. */
const POLL_BATCH = 500

/**
 * The embedded bus: an append-only log per topic in LMDB, stored as record
 * batches, as Kafka does: one value per `publish` call, holding its messages,
 * keyed by (topic, offset of its last message). A put per message cost more
 * than anything else a run did (docs/storage.md); one per batch is amortised.
 *
 * Offsets are dense per topic. The next one is read and written inside one
 * write transaction, so appends from several processes sharing DATA_DIR stay
 * dense and ordered. `publish` resolves after the commit, the local
 * equivalent of acks = all. `appendInTransaction` lets a writer in the same
 * environment (the evidence outbox) append and delete its copy in one commit.
 *
 * (The `bus-log` database of earlier versions, one value per message, is not read.)
 */
export class LocalBus implements TransactionalLog, FollowableBus {
  readonly kind = 'local'
  readonly maxInFlight = 4
  private readonly db: Database<Batch, Key>

  constructor (readonly state: StateStore) {
    this.db = state.openDB<Batch, Key>({ name: 'bus-log-v2' })
  }

  async start (): Promise<void> {}

  async publish (topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return
    await this.state.transaction(() => this.appendInTransaction(topic, messages.map(joined)))
  }

  appendInTransaction (topic: string, messages: BusMessage[]): void {
    if (messages.length === 0) return
    const batch: Batch = { timestamp: Date.now(), messages: messages.map(m => [m.key, m.value, m.headers]) }
    this.db.put([topic, this.nextOffset(topic) + messages.length - 1], batch)
  }

  /** Messages of `topic` from offset `from` on, in order, at most `limit`. */
  * read (topic: string, from = 0, limit = Infinity): Generator<StoredMessage> {
    let left = limit
    if (left <= 0) return
    // The first batch whose last offset is at or after `from` holds `from`:
    // offsets are dense, so it starts right after the previous batch's last.
    for (const { key, value } of this.db.getRange({ start: [topic, from], end: [topic, LAST] })) {
      let offset = key[1] - value.messages.length + 1
      for (const [k, v, headers] of value.messages) {
        if (offset >= from) {
          yield { topic, offset, key: k, value: v, headers, timestamp: value.timestamp }
          if (--left === 0) return
        }
        offset++
      }
    }
  }

  /**
   * Follows `topic` by reading the log every POLL_MS: appends of every
   * process sharing DATA_DIR are seen, in offset order. The position is the
   * subscription's own (in memory): it starts at the beginning or at the
   * current end, whatever the group.
   */
  subscribe (topic: string, options: SubscribeOptions, handler: (messages: StoredMessage[]) => Promise<void>): Subscription {
    let next = options.fromStart ? 0 : this.nextOffset(topic)
    let stopped = false
    let timer: NodeJS.Timeout | undefined
    let waiters: Array<{ target: number, resolve: (ok: boolean) => void }> = []
    const poll = async (): Promise<void> => {
      timer = undefined
      try {
        while (!stopped) {
          const messages = [...this.read(topic, next, POLL_BATCH)]
          if (messages.length === 0) break
          await handler(messages)
          next = messages.at(-1)!.offset + 1
        }
      } catch {
        // The handler reports its own failures; the batch is handed to it again at the next poll.
      } finally {
        waiters = waiters.filter(w => w.target > next || (w.resolve(true), false))
        if (!stopped) timer = setTimeout(() => { void poll() }, POLL_MS).unref()
      }
    }
    timer = setTimeout(() => { void poll() }, 0)
    return {
      caughtUp: timeoutMs => {
        const target = this.nextOffset(topic)
        if (next >= target) return Promise.resolve(true)
        return new Promise(resolve => {
          const timer = setTimeout(() => { waiters = waiters.filter(w => w !== waiter); resolve(false) }, timeoutMs)
          const waiter = { target, resolve: (ok: boolean) => { clearTimeout(timer); resolve(ok) } }
          waiters.push(waiter)
        })
      },
      stop: async () => {
        stopped = true
        clearTimeout(timer)
      }
    }
  }

  private nextOffset (topic: string): number {
    for (const key of this.db.getKeys({ start: [topic, LAST], end: [topic, -1], reverse: true, limit: 1 })) return key[1] + 1
    return 0
  }

  async probe (): Promise<void> {
    this.db.getStats()
  }

  /** A commit that fails is an LMDB problem the next request meets on its own; nothing to predict. */
  unavailable (): undefined {
    return undefined
  }

  async close (): Promise<void> {}
}
