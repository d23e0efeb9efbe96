import t from 'tap'
import { SlabPool } from '../../src/storage/index.js'

const live = new AbortController().signal

t.test('hands out at most maxSlabs; a release goes to the longest waiter', async t => {
  const pool = new SlabPool(16, 2)
  const a = await pool.acquire(live)
  const b = await pool.acquire(live)
  t.equal(pool.inUse, 2)
  const order: string[] = []
  const c = pool.acquire(live).then(s => { order.push('c'); return s })
  const d = pool.acquire(live).then(s => { order.push('d'); return s })
  await new Promise(resolve => setImmediate(resolve))
  t.same(order, [], 'nothing past the budget')
  t.equal(pool.waiting, 2)
  pool.release(b)
  t.equal(await c, b, 'the released slab itself is reused')
  pool.release(a)
  t.equal(await d, a)
  t.same(order, ['c', 'd'])
  t.equal(pool.inUse, 2)
})

t.test('slabs are shared memory of the slab size, so hashing workers can read them in place', async t => {
  const slab = await new SlabPool(64, 1).acquire(live)
  t.equal(slab.length, 64)
  t.ok(slab.buffer instanceof SharedArrayBuffer)
})

t.test('a waiter whose signal aborts gets its reason and leaves the queue', async t => {
  const pool = new SlabPool(16, 1)
  const held = await pool.acquire(live)
  const ac = new AbortController()
  const waiting = pool.acquire(ac.signal)
  const reason = new Error('client left')
  ac.abort(reason)
  await t.rejects(waiting, reason)
  pool.release(held)
  t.equal(pool.inUse, 0, 'the released slab went back to the pool, not to the aborted waiter')
  await t.rejects(pool.acquire(ac.signal), reason, 'an already aborted signal is refused at once')
})

t.test('a pool needs at least one slab', async t => {
  t.throws(() => new SlabPool(16, 0), RangeError)
})
