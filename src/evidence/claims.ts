export interface Acknowledgment {
  status: 'accepted'
  event_id: string
  media_count: number
}

/** One idempotency record, as both stores keep it. */
export type ClaimRecord =
  /** `owner`: the incarnation of the process storing the upload (absent in records of earlier versions). */
  | { state: 'in_progress', started_at: number, owner?: string }
  | { state: 'done', ack: Acknowledgment, expires_at: number }
  /** A claim given up (the upload failed): free, like no record. Only the shared store writes it. */
  | { state: 'released' }

export type Claim =
  | { kind: 'claimed' }
  | { kind: 'replay', ack: Acknowledgment }
  | { kind: 'in_progress' }

/**
 * A claim of an earlier version (no owner) held this long without finishing
 * is taken to be dead and the id may be claimed again.
 */
export const STALE_IN_PROGRESS_MS = 15 * 60 * 1000

/** What a request that found `record` does: replay it, take it, or ask whether `owner` still lives. */
export type ClaimDecision =
  | { kind: 'replay', ack: Acknowledgment }
  | { kind: 'take' }
  | { kind: 'held', owner: string }
  | { kind: 'in_progress' }

/**
 * The rule both stores apply to an existing record: a completed, unexpired
 * one is replayed; an expired or released one is free; one in progress is
 * held for as long as its holder lives (the caller asks), or, in a record
 * of an earlier version without a holder, for STALE_IN_PROGRESS_MS.
 */
export function decideClaim (record: ClaimRecord | undefined, now: number): ClaimDecision {
  if (record === undefined || record.state === 'released') return { kind: 'take' }
  if (record.state === 'done') return record.expires_at > now ? { kind: 'replay', ack: record.ack } : { kind: 'take' }
  if (record.owner !== undefined) return { kind: 'held', owner: record.owner }
  return now - record.started_at < STALE_IN_PROGRESS_MS ? { kind: 'in_progress' } : { kind: 'take' }
}

export function claimKey (tenant: string, eventId: string): string {
  return `${tenant}\u0000${eventId}`
}
