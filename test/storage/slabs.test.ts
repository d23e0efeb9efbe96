import t from 'tap'
import { GatewayError } from '../../src/errors.js'
import { SlabPool, defaultLimits, RATE_GRACE_MS } from '../../src/storage/index.js'

const live = new AbortController().signal
const tick = (): Promise<void> => new Promise(resolve => setImmediate(resolve))

t.test('hands out at most maxSlabs; a release goes to the longest waiter', async t => {
  const pool = new SlabPool(16, 2)
  const lease = pool.lease('a')
  const other = pool.lease('x')
  const a = await lease.acquire(live)
  const b = await other.acquire(live)
  t.equal(pool.inUse, 2)
  const order: string[] = []
  const c = pool.lease('c').acquire(live).then(s => { order.push('c'); return s })
  const d = pool.lease('d').acquire(live).then(s => { order.push('d'); return s })
  await tick()
  t.same(order, [], 'nothing past the budget')
  t.equal(pool.waiting, 2)
  other.release(b)
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
  // Alone, a tenant's share is half the pool.
  const pool = new SlabPool(16, 4, { slabsPerTenant: 3 })
  const slow = [pool.lease('a'), pool.lease('a'), pool.lease('a')]
  const held = [await slow[0]!.acquire(live), await slow[1]!.acquire(live)]
  let third: Uint8Array | undefined
  const waiting = slow[2]!.acquire(live).then(s => { third = s })
  await tick()
  t.equal(third, undefined, 'the tenant\'s third upload waits although a slab is free')
  t.equal(pool.waiting, 1)
  const other = pool.lease('b')
  const theirs = await other.acquire(live)
  t.equal(pool.inUse, 3, 'the other tenant got a slab the first could not take')
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
  const paced = { waitMs: 30_000, minBytesPerS: 64 * 1024, holdMs: 180_000 }
  t.same(defaultLimits(6), { slabsPerTenant: 5, uploadsPerTenant: 10, ...paced })
  t.same(defaultLimits(12), { slabsPerTenant: 9, uploadsPerTenant: 18, ...paced })
  t.same(defaultLimits(3), { slabsPerTenant: 2, uploadsPerTenant: 4, ...paced })
  t.same(defaultLimits(2), { slabsPerTenant: 1, uploadsPerTenant: 2, ...paced })
  t.same(defaultLimits(1), { slabsPerTenant: 1, uploadsPerTenant: 2, ...paced }, 'nothing to keep back')
})

t.test('a pool needs at least one slab', async t => {
  t.throws(() => new SlabPool(16, 0), RangeError)
})

/** Whether `acquire` resolved by the next turn of the loop (else it waits; `cancel` ends the wait). */
async function tryAcquire (pool: SlabPool, tenant: string): Promise<{ slab: Uint8Array | undefined, cancel: () => void }> {
  const ac = new AbortController()
  let slab: Uint8Array | undefined
  pool.lease(tenant).acquire(ac.signal).then(s => { slab = s }, () => undefined)
  await tick()
  return { slab, cancel: () => ac.abort(new Error('cancelled')) }
}

t.test('two tenants never take the last slab of the default pool, however many uploads they hold: a third is served at once', async t => {
  const pool = new SlabPool(16, 4, { ...defaultLimits(4), uploadsPerTenant: 10 })
  const tries = []
  for (const tenant of ['a', 'a', 'a', 'b', 'b', 'b']) tries.push(await tryAcquire(pool, tenant))
  t.same(tries.map(x => x.slab !== undefined), [true, true, false, true, false, false], 'the first holds half the pool, the second its share of what is left')
  t.equal(pool.inUse, 3)
  const third = await tryAcquire(pool, 'c')
  t.ok(third.slab, 'the third tenant gets the slab neither may take')
  tries.forEach(x => x.cancel())
})

t.test('any k tenants within their shares leave a share free for the next, whatever order they ask in', async t => {
  const pool = new SlabPool(16, 8, { slabsPerTenant: 8, uploadsPerTenant: 20 })
  const waits: Array<() => void> = []
  let held = 0
  for (let round = 0; round < 4; round++) {
    for (const tenant of ['a', 'b', 'c']) {
      const x = await tryAcquire(pool, tenant)
      if (x.slab) held++
      else waits.push(x.cancel)
    }
  }
  t.equal(held, 6, 'three tenants asking in turn for as much as they can hold six of eight slabs')
  t.ok((await tryAcquire(pool, 'd')).slab, 'a fourth is served at once')
  waits.forEach(cancel => cancel())
})

t.test('a freed slab goes to a tenant under its share before an earlier waiter of one at or over it', async t => {
  const pool = new SlabPool(16, 4)
  const a = pool.lease('a')
  const first = await a.acquire(live)
  await a.acquire(live)
  const order: string[] = []
  const late = new AbortController()
  pool.lease('a').acquire(late.signal).then(() => order.push('a'), () => undefined)
  await tick()
  t.ok((await tryAcquire(pool, 'b')).slab)
  t.ok((await tryAcquire(pool, 'c')).slab)
  pool.lease('d').acquire(live).then(() => order.push('d'), () => undefined)
  await tick()
  t.equal(pool.waiting, 2)
  a.release(first)
  await tick()
  t.same(order, ['d'], 'd, holding nothing, goes first; a holds its share of four tenants already')
  late.abort(new Error('done'))
})

t.test('an upload is behind when its slab fills under the minimum rate past the grace, or a slab is held past the deadline', async t => {
  const limits = { ...defaultLimits(4), minBytesPerS: 1000, holdMs: 60_000 }
  const pool = new SlabPool(16, 4, limits)
  const lease = pool.lease('a')
  const before = performance.now()
  await lease.acquire(live)
  const since = performance.now()
  t.equal(lease.behind(before + RATE_GRACE_MS, limits), undefined, 'nothing asked within the grace')
  t.equal(lease.behind(before + RATE_GRACE_MS + 3000, limits), 'the upload sent under 1000 bytes a second', 'three seconds past the grace, no byte')
  lease.filled(2500)
  t.equal(lease.behind(since + RATE_GRACE_MS + 2000, limits), undefined, '2500 bytes two seconds past the grace keep up')
  t.equal(lease.behind(before + RATE_GRACE_MS + 3000, limits), 'the upload sent under 1000 bytes a second', 'and fall behind a second later')
  lease.stored()
  t.equal(lease.behind(before + RATE_GRACE_MS + 30_000, limits), undefined, 'a slab being stored is the store\'s pace, not the client\'s')
  t.equal(lease.behind(before + 60_001, limits), 'a buffer slab was held past 60000 ms', 'but it is still held to the deadline')
})

t.test('past the deadline the lease ends with 408 upload_too_slow; its slab goes back when released, and no new one is given', async t => {
  const pool = new SlabPool(16, 2, { holdMs: 20 })
  const lease = pool.lease('a')
  const slab = await lease.acquire(live)
  // The pool's check does not keep a process alive; this test's wait must.
  const alive = setInterval(() => undefined, 1000)
  const reason = await new Promise<unknown>(resolve => lease.signal.addEventListener('abort', () => resolve(lease.signal.reason), { once: true }))
  clearInterval(alive)
  t.match(reason, { code: 'upload_too_slow', status: 408, details: { media: 'a buffer slab was held past 20 ms' } })
  await t.rejects(lease.acquire(lease.signal), { code: 'upload_too_slow' })
  lease.release(slab)
  lease.close()
  t.equal(pool.inUse, 0)
})
