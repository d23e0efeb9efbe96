import type { Logger } from 'pino'
import type { SharedDocuments } from '../cluster/index.js'
import type { RemoteOwner } from '../state/index.js'
import { decideClaim, type Acknowledgment, type Claim, type ClaimRecord, type IdempotencyClaims } from './claims.js'

const PREFIX = 'idempotency/'
/** Rounds of read-and-replace a claim may lose to other writers before it answers 409. */
const MAX_ROUNDS = 3
/** Retries, in the background, of a completion or release the store failed (after the answer). */
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
    await this.finish(key, { state: 'done', ack, expires_at: this.now() + this.ttlMs })
  }

  /**
   * Frees the claim with a tombstone (MinIO ignores If-Match on DeleteObject).
   * Never throws: a claim this live node failed to release would otherwise
   * answer 409 for as long as it lives; it is retried in the background.
   */
  async release (key: string): Promise<void> {
    await this.finish(key, { state: 'released' })
  }

  async sweep (): Promise<number> {
    return 0
  }

  private claimed (key: string, etag: string): Claim {
    this.held.set(key, etag)
    return { kind: 'claimed' }
  }

  /** Replaces this node's version of the claim by `record`, retrying in the background while the store fails. */
  private async finish (key: string, record: ClaimRecord): Promise<void> {
    const etag = this.held.get(key)
    if (etag === undefined) return
    this.held.delete(key)
    await this.replace(key, record, etag, COMPLETE_RETRIES)
  }

  private async replace (key: string, record: ClaimRecord, etag: string, retries: number): Promise<void> {
    try {
      const replaced = await this.documents.replace(this.path(key), record, etag)
      if (replaced === undefined && record.state === 'done') this.log.warn({ key }, 'idempotency claim was taken over before this node completed it (it was taken for dead); the event may be published twice')
    } catch (err) {
      if (retries === 0) {
        this.log.error({ err: (err as Error).message, key, state: record.state }, 'idempotency claim never finished in S3; it is free once this node stops')
        return
      }
      if (retries === COMPLETE_RETRIES) this.log.warn({ err: (err as Error).message, key, state: record.state }, 'idempotency claim not finished in S3; retrying in the background')
      setTimeout(() => { this.replace(key, record, etag, retries - 1).catch(() => undefined) }, COMPLETE_RETRY_MS).unref()
    }
  }

  private path (key: string): string {
    const [tenant, eventId] = key.split('\u0000') as [string, string]
    return `${PREFIX}${tenant}/${eventId}.json`
  }
}
