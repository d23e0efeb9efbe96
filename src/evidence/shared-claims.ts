import type { Logger } from 'pino'
import type { SharedDocuments } from '../cluster/index.js'
import type { RemoteOwner } from '../state/index.js'
import { decideClaim, type Acknowledgment, type Claim, type ClaimRecord, type IdempotencyClaims } from './claims.js'

const PREFIX = 'idempotency/'
/** Rounds of read-and-replace a claim may lose to other writers before it answers 409. */
const MAX_ROUNDS = 3
/** Retries of a completion the store refused for a while, in the background, after the 202. */
const COMPLETE_RETRIES = 10
const COMPLETE_RETRY_MS = 5_000

/**
 * The claims of a cluster: `_gateway/idempotency/<tenant key>/<event_id>.json`
 * in S3, decided by conditional writes so that every node agrees without
 * talking to the others (docs/cluster-state.md):
 * - claim: create the record (`If-None-Match: *`); the first writer wins;
 * - the loser reads it: done and unexpired → replay; in progress by a live
 *   holder (its node's heartbeat) → 409; expired, released or held by a dead
 *   incarnation → take it over by replacing that very version (`If-Match`),
 *   so of two nodes taking over at once only one does;
 * - complete and release replace the version this process wrote (`If-Match`):
 *   a node that lost its claim (taken over while it was thought dead) cannot
 *   overwrite the taker's.
 * Records past IDEMPOTENCY_TTL_S count as absent; an S3 lifecycle rule on the
 * prefix removes them (sweep does nothing here).
 */
export class SharedClaims implements IdempotencyClaims {
  /** The version of each claim this process holds, for its conditional completion. */
  private readonly held = new Map<string, string>()

  constructor (private readonly documents: SharedDocuments, private readonly ttlMs: number, private readonly owner: RemoteOwner, private readonly log: Logger, private readonly now: () => number = Date.now) {}

  async claim (key: string): Promise<Claim> {
    const doc = this.path(key)
    const mine: ClaimRecord = { state: 'in_progress', started_at: this.now(), owner: this.owner.id }
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const created = await this.documents.create(doc, mine)
      if (created !== undefined) return this.claimed(key, created)
      const found = await this.documents.get<ClaimRecord>(doc)
      // Gone between the two calls (removed by the lifecycle rule): create again.
      if (found === undefined) continue
      const decision = decideClaim(found.value, this.now())
      if (decision.kind === 'replay') return decision
      if (decision.kind === 'in_progress') return decision
      if (decision.kind === 'held' && await this.owner.isAlive(decision.owner)) return { kind: 'in_progress' }
      const taken = await this.documents.replace(doc, mine, found.etag)
      if (taken !== undefined) return this.claimed(key, taken)
    }
    // Several writers are at it at once: one of them holds it now.
    return { kind: 'in_progress' }
  }

  /** Nothing in the LMDB transaction: the record is shared, not local. */
  completeInTransaction (): void {}

  /**
   * Marks the claim done. The envelope is already in Kafka or in this node's
   * outbox, so a store that fails here does not fail the request: the
   * completion is retried in the background while this node holds the claim
   * (a retry meanwhile is 409, as for any request in progress).
   */
  async complete (key: string, ack: Acknowledgment): Promise<void> {
    try {
      await this.tryComplete(key, ack)
    } catch (err) {
      this.log.warn({ err: (err as Error).message, key }, 'idempotency record not completed in S3; retrying in the background')
      this.retryComplete(key, ack, COMPLETE_RETRIES)
    }
  }

  async release (key: string): Promise<void> {
    const etag = this.held.get(key)
    if (etag === undefined) return
    this.held.delete(key)
    // A tombstone rather than a delete: MinIO ignores If-Match on DeleteObject.
    await this.documents.replace(this.path(key), { state: 'released' }, etag)
  }

  async sweep (): Promise<number> {
    return 0
  }

  private claimed (key: string, etag: string): Claim {
    this.held.set(key, etag)
    return { kind: 'claimed' }
  }

  private async tryComplete (key: string, ack: Acknowledgment): Promise<void> {
    const etag = this.held.get(key)
    if (etag === undefined) return
    const done = await this.documents.replace(this.path(key), { state: 'done', ack, expires_at: this.now() + this.ttlMs } satisfies ClaimRecord, etag)
    this.held.delete(key)
    if (done === undefined) this.log.warn({ key }, 'idempotency claim was taken over before it completed (this node was taken for dead); the event may be published twice')
  }

  private retryComplete (key: string, ack: Acknowledgment, left: number): void {
    setTimeout(() => {
      this.tryComplete(key, ack).catch(err => {
        if (left > 1) return this.retryComplete(key, ack, left - 1)
        this.held.delete(key)
        this.log.error({ err: (err as Error).message, key }, 'idempotency record never completed in S3; a retry after this node stops may publish the event again')
      })
    }, COMPLETE_RETRY_MS).unref()
  }

  private path (key: string): string {
    const [tenant, eventId] = key.split('\u0000') as [string, string]
    return `${PREFIX}${tenant}/${eventId}.json`
  }
}
