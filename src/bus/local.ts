import type { Database } from 'lmdb'
import type { StateStore } from '../storage/index.js'
import type { Bus, BusMessage, StoredMessage } from './types.js'

type Key = [string, number]
interface Row { key: string, value: string | Buffer, headers: Record<string, string>, timestamp: number }

/**
 * The embedded bus: an append-only log per topic in LMDB, keys (topic, offset).
 * The offset is read and written inside one write transaction, so appends from
 * several processes sharing DATA_DIR stay dense and ordered. `publish`
 * resolves after the commit is on disk, the local equivalent of acks = all.
 */
export class LocalBus implements Bus {
  readonly kind = 'local'
  private readonly db: Database<Row, Key>

  constructor (state: StateStore) {
    this.db = state.openDB<Row, Key>({ name: 'bus-log' })
  }

  async start (): Promise<void> {}

  async publish (topic: string, messages: BusMessage[]): Promise<void> {
    if (messages.length === 0) return
    const timestamp = Date.now()
    await this.db.transaction(() => {
      let next = this.nextOffset(topic)
      for (const m of messages) this.db.put([topic, next++], { key: m.key, value: m.value, headers: m.headers, timestamp })
    })
  }

  /** Messages of `topic` from offset `from` on, in order. */
  * read (topic: string, from = 0, limit = Infinity): Generator<StoredMessage> {
    for (const { key, value } of this.db.getRange({ start: [topic, from], end: [topic, Number.MAX_SAFE_INTEGER], limit })) {
      yield { topic, offset: key[1], ...value }
    }
  }

  private nextOffset (topic: string): number {
    for (const key of this.db.getKeys({ start: [topic, Number.MAX_SAFE_INTEGER], end: [topic, -1], reverse: true, limit: 1 })) return key[1] + 1
    return 0
  }

  async probe (): Promise<void> {
    this.db.getStats()
  }

  async close (): Promise<void> {}
}
