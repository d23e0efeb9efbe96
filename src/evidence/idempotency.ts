import type { Database } from 'lmdb'
import type { Owner, StateStore } from '../state/index.js'
import { claimKey, decideClaim, type Acknowledgment, type Claim, type ClaimRecord } from './claims.js'

/**
 * The claims of a single node, in LMDB.
 *
 * A claim in progress is stamped with the incarnation of the process that
 * holds it and lasts exactly as long as that process: a request that finds
 * the claim of a process that died (kill -9, OOM, power loss) takes it over
 * at once, so the client's retry is stored rather than answered 409. Claims
 * of a live process are never taken over, however long its upload runs.
 */
export class IdempotencyStore {
  private readonly db: Database<ClaimRecord, string>

  private readonly ttlMs: number

  /**
   * `ttlS` is IDEMPOTENCY_TTL_S as configured, in seconds; `now` is the clock
   * in milliseconds (injected by tests that cross the window).
   */
  constructor (private readonly state: StateStore, ttlS: number, private readonly owner: Owner, private readonly now: () => number = Date.now) {
    this.ttlMs = ttlS * 1000
    this.db = state.openDB<ClaimRecord, string>({ name: 'evidence-idempotency' })
  }

  static key (clientId: string, eventId: string): string {
    return claimKey(clientId, eventId)
  }

  /** Atomically claims the key, or says why not (a replay, or a request still running). */
  async claim (key: string): Promise<Claim> {
    return this.state.transaction(() => {
      const now = this.now()
      const decision = decideClaim(this.db.get(key), now)
      if (decision.kind === 'replay') return decision
      if (decision.kind === 'in_progress' || (decision.kind === 'held' && this.owner.isAlive(decision.owner))) return { kind: 'in_progress' }
      this.db.put(key, { state: 'in_progress', started_at: now, owner: this.owner.id })
      return { kind: 'claimed' }
    })
  }

  /** Records completion; call inside the transaction that also writes the outbox entry. */
  complete (key: string, ack: Acknowledgment): void {
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
        const decision = decideClaim(value, now)
        if (decision.kind === 'take' || (decision.kind === 'held' && !this.owner.isAlive(decision.owner))) { this.db.remove(key); removed++ }
      }
    })
    return removed
  }
}
