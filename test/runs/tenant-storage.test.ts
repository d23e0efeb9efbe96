import t from 'tap'
import { TenantStorage, WRITE_BURST_S } from '../../src/runs/tenant-storage.js'

const clock = () => {
  let now = 0
  return { now: () => now, pass: (ms: number) => { now += ms } }
}

t.test('a tenant holding its quota, ended runs and runs in flight together, is refused; others are not', async t => {
  const stored = new Map([['full', 900]])
  const storage = new TenantStorage({ storedBytes: 1000, writeBytesPerS: 1e9 }, tenant => stored.get(tenant) ?? 0)
  t.equal(storage.refusal('full'), undefined, '900 of 1,000 held')
  storage.written('full', 100)
  const refused = storage.refusal('full')
  t.match(refused, { code: 'rate_limited', message: 'run_storage_limit', headers: { 'retry-after': '60' } })
  t.match(refused?.details?.['detail'], /hold 1000 bytes, at most 1000/)
  t.equal(storage.refusal('other'), undefined, 'another tenant starts')
  storage.released('full', 100)
  t.equal(storage.refusal('full'), undefined, 'a run given up leaves the count of runs in flight')
  stored.set('full', 1000)
  t.ok(storage.refusal('full'), 'the store\'s count alone is enough')
})

t.test('a tenant writing faster than its rate is refused for as long as its deficit takes to refill', async t => {
  const c = clock()
  const storage = new TenantStorage({ storedBytes: Infinity, writeBytesPerS: 1000 }, () => 0, c.now)
  storage.written('fast', 1000 * WRITE_BURST_S)
  t.equal(storage.refusal('fast'), undefined, 'its burst is spent, not overdrawn')
  storage.written('fast', 2500)
  t.match(storage.refusal('fast'), { message: 'run_storage_limit', headers: { 'retry-after': '3' } }, '2,500 bytes over at 1,000 a second: 3 s')
  c.pass(2000)
  t.match(storage.refusal('fast'), { headers: { 'retry-after': '1' } })
  c.pass(600)
  t.equal(storage.refusal('fast'), undefined, 'refilled')
  t.equal(storage.refusal('slow'), undefined, 'a tenant that never wrote')
})

t.test('the rate budget of a tenant is refilled up to its burst, never beyond', async t => {
  const c = clock()
  const storage = new TenantStorage({ storedBytes: Infinity, writeBytesPerS: 1000 }, () => 0, c.now)
  storage.written('t', 1)
  c.pass(3_600_000)
  storage.written('t', 1000 * WRITE_BURST_S + 1)
  t.ok(storage.refusal('t'), 'an hour idle saves up at most the burst')
})
