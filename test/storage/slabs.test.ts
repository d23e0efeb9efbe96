import t from 'tap'
import { GatewayError } from '../../src/errors.js'
import { SlabPool, defaultLimits } from '../../src/storage/index.js'

const live = new AbortController().signal
const tick = (): Promise<void> => new Promise(resolve => setImmediate(resolve))

t.test('hands out at most maxSlabs; a release goes to the longest waiter', async t => {
  const pool = new SlabPool(16, 2, { slabsPerTenant: 2 })
  const lease = pool.lease('a')
  const a = await lease.acquire(live)
  const b = await lease.acquire(live)
  t.equal(pool.inUse, 2)
  const order: string[] = []
  const other = pool.lease('b')
  const c = other.acquire(live).then(s => { order.push('c'); return s })
  const d = other.acquire(live).then(s => { order.push('d'); return s })
  await tick()
  t.same(order, [], 'nothing past the budget')
  t.equal(pool.waiting, 2)
  lease.release(b)
  t.equal(await c, b, 'the released slab itself is reused')
  lease.release(a)
  t.equal(await d, a)
  t.same(order, ['c', 'd'])
  t.equal(pool.inUse, 2)
})

t.test('slabs are shared memory of the slab size, so hashing workers can read them in place', async t => {
  const slab = await new SlabPool(64, 1).lease('a').acquire(live)
  t.equal(slab.length, 64)
  t.ok(slab.buffer instanceof SharedArrayBuffer)
})

t.test('a waiter whose signal aborts gets its reason and leaves the queue', async t => {
  const pool = new SlabPool(16, 1)
  const lease = pool.lease('a')
  const held = await lease.acquire(live)
  const ac = new AbortController()
  const waiting = pool.lease('b').acquire(ac.signal)
  const reason = new Error('client left')
  ac.abort(reason)
  await t.rejects(waiting, reason)
  lease.release(held)
  t.equal(pool.inUse, 0, 'the released slab went back to the pool, not to the aborted waiter')
  await t.rejects(pool.lease('c').acquire(ac.signal), reason, 'an already aborted signal is refused at once')
})

t.test('one tenant holds at most its share: another tenant is served past its waiting uploads', async t => {
  const pool = new SlabPool(16, 3, { slabsPerTenant: 2 })
  const slow = [pool.lease('a'), pool.lease('a'), pool.lease('a')]
  const held = [await slow[0]!.acquire(live), await slow[1]!.acquire(live)]
  let third: Uint8Array | undefined
  const waiting = slow[2]!.acquire(live).then(s => { third = s })
  await tick()
  t.equal(third, undefined, 'the tenant\'s third upload waits although a slab is free')
  t.equal(pool.waiting, 1)
  const other = pool.lease('b')
  const theirs = await other.acquire(live)
  t.equal(pool.inUse, 3, 'the other tenant got the slab the first could not take')
  other.release(theirs)
  await tick()
  t.equal(third, undefined, 'a slab freed by another tenant does not lift the first past its share')
  slow[0]!.release(held[0]!)
  await waiting
  t.ok(third, 'the tenant\'s own release lets its waiting upload go on')
})

t.test('a tenant writing as many objects as it may is refused the next with storage_busy, until one closes', async t => {
  const pool = new SlabPool(16, 4, { uploadsPerTenant: 2 })
  const first = pool.lease('a')
  pool.lease('a')
  const refused = t.throws(() => pool.lease('a')) as unknown as GatewayError
  t.match(refused, { code: 'storage_busy', status: 503, headers: { 'retry-after': /^\d+$/ } })
  t.ok(pool.lease('b'), 'another tenant is not refused')
  first.close()
  first.close()
  t.ok(pool.lease('a'), 'a place freed by a closed lease (closing twice frees one)')
  t.throws(() => pool.lease('a'), { code: 'storage_busy' })
})

t.test('a wait past the limit is refused with storage_busy, and the slab freed later is not lost to it', async t => {
  const pool = new SlabPool(16, 1, { waitMs: 20 })
  const lease = pool.lease('a')
  const held = await lease.acquire(live)
  await t.rejects(pool.lease('b').acquire(live), { code: 'storage_busy', status: 503, details: { media: /within 20 ms/ } })
  t.equal(pool.waiting, 0, 'the waiter left the queue')
  lease.release(held)
  t.equal(pool.inUse, 0)
})

t.test('defaults: a quarter of the pool (at least one slab) is kept from any one tenant, which writes twice as many objects as it may hold slabs', async t => {
  t.same(defaultLimits(6), { slabsPerTenant: 5, uploadsPerTenant: 10, waitMs: 30_000 })
  t.same(defaultLimits(12), { slabsPerTenant: 9, uploadsPerTenant: 18, waitMs: 30_000 })
  t.same(defaultLimits(3), { slabsPerTenant: 2, uploadsPerTenant: 4, waitMs: 30_000 })
  t.same(defaultLimits(2), { slabsPerTenant: 1, uploadsPerTenant: 2, waitMs: 30_000 })
  t.same(defaultLimits(1), { slabsPerTenant: 1, uploadsPerTenant: 2, waitMs: 30_000 }, 'nothing to keep back')
})

t.test('a pool needs at least one slab', async t => {
  t.throws(() => new SlabPool(16, 0), RangeError)
})
