import t from 'tap'
import { decideClaim, STALE_IN_PROGRESS_MS, type ClaimRecord } from '../../src/evidence/index.js'

const ack = { status: 'accepted' as const, event_id: 'e', media_count: 1 }
const now = 10_000_000

t.test('no record, or a released one, is free', async t => {
  t.same(decideClaim(undefined, now), { kind: 'take' })
  t.same(decideClaim({ state: 'released' }, now), { kind: 'take' })
})

t.test('a completed record replays until it expires, then is free', async t => {
  const done: ClaimRecord = { state: 'done', ack, expires_at: now + 1 }
  t.same(decideClaim(done, now), { kind: 'replay', ack })
  t.same(decideClaim(done, now + 1), { kind: 'take' }, 'expired at its expiry')
})

t.test('a claim in progress is held by its owner, whose liveness the caller asks', async t => {
  t.same(decideClaim({ state: 'in_progress', started_at: 0, owner: 'n1-abc' }, now), { kind: 'held', owner: 'n1-abc' }, 'however old: age never frees a live holder')
})

t.test('a claim of an earlier version (no owner) is held for 15 minutes', async t => {
  t.same(decideClaim({ state: 'in_progress', started_at: now - STALE_IN_PROGRESS_MS + 1 }, now), { kind: 'in_progress' })
  t.same(decideClaim({ state: 'in_progress', started_at: now - STALE_IN_PROGRESS_MS }, now), { kind: 'take' })
})
