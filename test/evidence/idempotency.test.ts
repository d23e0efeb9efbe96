import t from 'tap'
import { IdempotencyStore, STALE_IN_PROGRESS_MS } from '../../src/evidence/index.js'
import { openState, type Owner } from '../../src/state/index.js'
import { loadConfig } from '../../src/config/index.js'

const ack = { status: 'accepted' as const, event_id: 'e', media_count: 0 }

function setup (t: { testdir: () => string, teardown: (fn: () => unknown) => void }) {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const alive = new Set(['a', 'b'])
  const clock = { now: 1_000_000 }
  const as = (id: string): IdempotencyStore => {
    const owner: Owner = { id, isAlive: other => alive.has(other) }
    return new IdempotencyStore(state, 60, owner, () => clock.now)
  }
  return { state, alive, clock, as }
}

t.test('a claim lasts as long as the process holding it, however long that is', async t => {
  const { alive, clock, as } = setup(t)
  const a = as('a')
  const b = as('b')
  t.same(await a.claim('k'), { kind: 'claimed' })
  clock.now += 24 * 3600 * 1000
  t.same(await b.claim('k'), { kind: 'in_progress' }, 'a live holder keeps it, even past the old 15 minutes')
  alive.delete('a')
  t.same(await b.claim('k'), { kind: 'claimed' }, 'taken over at once when its holder is gone')
  t.same(await a.claim('k'), { kind: 'in_progress' }, 'and now held by the taker')
})

t.test('a completed key replays whoever held it', async t => {
  const { state, alive, as } = setup(t)
  const a = as('a')
  await a.claim('k')
  await state.transaction(() => a.complete('k', ack))
  alive.delete('a')
  t.same(await as('b').claim('k'), { kind: 'replay', ack })
})

t.test('a claim of an earlier version (no holder) is free after 15 minutes, as before', async t => {
  const { state, clock, as } = setup(t)
  const db = state.openDB<object, string>({ name: 'evidence-idempotency' })
  await db.put('old', { state: 'in_progress', started_at: clock.now })
  const b = as('b')
  clock.now += STALE_IN_PROGRESS_MS - 1
  t.same(await b.claim('old'), { kind: 'in_progress' })
  clock.now += 1
  t.same(await b.claim('old'), { kind: 'claimed' })
})

t.test('the sweep removes the claims of processes that are gone and keeps live ones', async t => {
  const { alive, as } = setup(t)
  await as('a').claim('of-a')
  await as('b').claim('of-b')
  alive.delete('a')
  t.equal(await as('b').sweep(), 1)
  t.same(await as('c').claim('of-b'), { kind: 'in_progress' })
  t.same(await as('c').claim('of-a'), { kind: 'claimed' })
})

t.test('IDEMPOTENCY_TTL_S is seconds: a day by default, a second either side of it', async t => {
  const { state, clock, as } = setup(t)
  const store = (ttlS: number): IdempotencyStore => new IdempotencyStore(state, ttlS, { id: 'a', isAlive: () => true }, () => clock.now)
  const cross = async (ttlS: number, key: string): Promise<void> => {
    const a = store(ttlS)
    t.same(await a.claim(key), { kind: 'claimed' })
    const completedAt = clock.now
    await state.transaction(() => a.complete(key, ack))
    clock.now = completedAt + ttlS * 1000 - 1000
    t.same(await as('b').claim(key), { kind: 'replay', ack }, `${ttlS} s less a second after: a replay`)
    clock.now = completedAt + ttlS * 1000 + 1000
    t.same(await as('b').claim(key), { kind: 'claimed' }, `${ttlS} s and a second after: fresh`)
  }
  const day = loadConfig({}).idempotencyTtlS
  t.equal(day, 24 * 3600, 'the default window is 24 hours')
  await cross(day, 'by-default')
  await cross(loadConfig({ IDEMPOTENCY_TTL_S: '90' }).idempotencyTtlS, 'configured')
})

t.test('the sweep keeps a completed key until its window ends', async t => {
  const { state, clock, as } = setup(t)
  const a = as('a')
  await a.claim('k')
  const completedAt = clock.now
  await state.transaction(() => a.complete('k', ack))
  clock.now = completedAt + 60_000 - 1
  t.equal(await a.sweep(), 0, 'inside the window: kept')
  t.same(await as('b').claim('k'), { kind: 'replay', ack })
  clock.now = completedAt + 60_000
  t.equal(await a.sweep(), 1, 'at its end: removed')
  t.same(await as('b').claim('k'), { kind: 'claimed' })
})
