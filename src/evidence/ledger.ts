import type { BusMessage } from '../bus/index.js'
import type { Acknowledgment } from './claims.js'

/** What a request gets when it claims an event_id. */
export type LedgerClaim =
  /**
   * Its own: store the media, then `accept`. `attempt` names its objects
   * where attempts can overlap (a cluster), so one never touches another's;
   * `lost` aborts once the claim is no longer this request's (taken over
   * after this process went quiet past the claim's lease).
   */
  | { kind: 'claimed', attempt: string | undefined, lost: AbortSignal }
  | { kind: 'replay', ack: Acknowledgment }
  | { kind: 'in_progress' }

/** How `accept` ended: accepted (202), or, for an attempt that lost its claim meanwhile, the truth to answer with. */
export type LedgerOutcome =
  | { kind: 'accepted' }
  | { kind: 'replay', ack: Acknowledgment }
  | { kind: 'in_progress' }

/**
 * Where event_ids are claimed and accepted events are kept until the bus has
 * them: LMDB and its outbox on one node (`LocalLedger`), S3 in a cluster
 * (`SharedLedger`), where every node sees the same claims.
 */
export interface EvidenceLedger {
  /** `folder(attempt)`: where the objects of the attempt go, so an attempt that takes over a dead one removes those. */
  claim(key: string, folder: (attempt: string) => string): Promise<LedgerClaim>
  /**
   * Records the event as accepted with the envelope to publish, then
   * publishes it (the answer waits for the bus while it is up). For a claim
   * lost meanwhile, nothing is recorded or published.
   */
  accept(key: string, ack: Acknowledgment, topic: string, message: BusMessage): Promise<LedgerOutcome>
  /** What the record of an event says now: for a request whose claim was taken over. */
  truth(key: string): Promise<LedgerOutcome>
  /** Frees a claim whose upload failed, so a retry is stored. */
  release(key: string): Promise<void>
  start(): void
  stop(): Promise<void>
  /** Accepted envelopes not yet on the bus. */
  readonly backlog: number
  /** Age in ms of the oldest of them, 0 when none. */
  oldestAgeMs(): number
  readonly lastError: string | undefined
}
