import type { Database } from 'lmdb'
import type { Owner, StateStore } from '../state/index.js'

export interface Acknowledgment {
  status: 'accepted'
  event_id: string
  media_count: number
}

type Entry =
  /** `owner`: the incarnation of the process storing the upload (absent in records of earlier versions). */
  | { state: 'in_progress', started_at: number, owner?: string }
  | { state: 'done', ack: Acknowledgment, expires_at: number }

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay', ack: Acknowledgment }
  | { kind: 'in_progress' }

/**
 * A claim of an earlier version (no owner) held this long without finishing
 * is taken to be dead and the id may be claimed again.
 */
export const STALE_IN_PROGRESS_MS = 15 * 60 * 1000

/**
 * (client_id, event_id) → in progress, or done with the acknowledgment to replay.
 *
 * A claim in progress is stamped with the incarnation of the process that
 * holds it and lasts exactly as long as that process: a request that finds
 * the claim of a process that died (kill -9, OOM, power loss) takes it over
 * at once, so the client's retry is stored rather than answered 409. Claims
 * of a live process are never taken over, however long its upload runs.
 */
export class IdempotencyStore {
  private readonly db: Database<Entry, string>

  private readonly ttlMs: number

  /**
   * `ttlS` is IDEMPOTENCY_TTL_S as configured, in seconds; `now` is the clock
   * in milliseconds (injected by tests that cross the window).
   */
  constructor (private readonly state: StateStore, ttlS: number, private readonly owner: Owner, private readonly now: () => number = Date.now) {
    this.ttlMs = ttlS * 1000
    this.db = state.openDB<Entry, string>({ name: 'evidence-idempotency' })
  }

  static key (clientId: string, eventId: string): string {
    return `${clientId}\u0000${eventId}`
  }

  /** Atomically claims the key, or says why not (a replay, or a request still running). */
  async claim (key: string): Promise<Claim> {
    return this.state.transaction(() => {
      const now = this.now()
      const entry = this.db.get(key)
      if (entry?.state === 'done' && entry.expires_at > now) return { kind: 'replay', ack: entry.ack }
      if (entry?.state === 'in_progress' && this.held(entry, now)) return { kind: 'in_progress' }
      this.db.put(key, { state: 'in_progress', started_at: now, owner: this.owner.id })
      return { kind: 'claimed' }
    })
  }

  /** Records completion; call inside the transaction that also writes the outbox entry. */
  completeInTransaction (key: string, ack: Acknowledgment): void {
    this.db.put(key, { state: 'done', ack, expires_at: this.now() + this.ttlMs })
  }

  async release (key: string): Promise<void> {
    await this.db.remove(key)
  }

  /** Drops expired records and the claims of processes that are gone; returns how many. */
  async sweep (): Promise<number> {
    const now = this.now()
    let removed = 0
    await this.state.transaction(() => {
      for (const { key, value } of this.db.getRange()) {
        const expired = value.state === 'done' ? value.expires_at <= now : !this.held(value, now)
        if (expired) { this.db.remove(key); removed++ }
      }
    })
    return removed
  }

  private held (claim: Extract<Entry, { state: 'in_progress' }>, now: number): boolean {
    return claim.owner === undefined ? now - claim.started_at < STALE_IN_PROGRESS_MS : this.owner.isAlive(claim.owner)
  }
}
