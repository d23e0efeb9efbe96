import t from 'tap'
import { ChunkPool } from '../../src/http/chunk-pool.js'
import { BodyReader } from '../../src/http/body.js'

const KiB = 1024

t.test('a buffer is at least 16 KiB and a power of two; one given back is taken again by its size class', async t => {
  const pool = new ChunkPool(1024 * KiB)
  t.equal(pool.take(1).byteLength, 16 * KiB)
  const b = pool.take(40 * KiB)
  t.equal(b.byteLength, 64 * KiB)
  pool.give(b)
  t.equal(pool.bytes, 64 * KiB)
  t.not(pool.take(20 * KiB), b, 'another size class gets a buffer of its own')
  t.equal(pool.take(64 * KiB), b, 'the same class gets the idle buffer back')
  t.equal(pool.bytes, 0)
})

t.test('the pool keeps at most its bound; what does not fit is left to the GC', async t => {
  const pool = new ChunkPool(64 * KiB)
  const [a, b, c] = [pool.take(32 * KiB), pool.take(32 * KiB), pool.take(32 * KiB)]
  pool.give(a)
  pool.give(b)
  pool.give(c)
  t.equal(pool.bytes, 64 * KiB)
  t.equal(pool.take(32 * KiB), b)
  t.equal(pool.take(32 * KiB), a)
  t.not(pool.take(32 * KiB), c, 'the third was not kept')
})

const flow = { pause () {}, resume () {} }
function chunk (bytes: number, fill: number): ArrayBuffer {
  return new Uint8Array(bytes).fill(fill).buffer
}

t.test('the buffers of a body read to its end serve the next body: uploads leave no garbage behind', async t => {
  const first = new BodyReader(flow, 1024 * KiB, Infinity)
  for (let i = 0; i < 4; i++) first.feed(chunk(50 * KiB, i), false)
  first.feed(new ArrayBuffer(0), true)
  const used = new Set<ArrayBufferLike>()
  for await (const c of first) {
    t.equal(c.length, 50 * KiB)
    used.add(c.buffer)
  }
  t.equal(used.size, 4, 'four chunks queued at once took four buffers')
  const second = new BodyReader(flow, 1024 * KiB, Infinity)
  for (let i = 0; i < 4; i++) second.feed(chunk(60 * KiB, 10 + i), false)
  second.feed(new ArrayBuffer(0), true)
  let n = 0
  for await (const c of second) {
    t.ok(used.has(c.buffer), `chunk ${n} is in a buffer of the first body`)
    t.ok(c.every(byte => byte === 10 + n), `and holds its own bytes, not the first body's (chunk ${n})`)
    n++
  }
  t.equal(n, 4)
})

t.test('a body that fails gives back its queued chunks, never the one its reader holds', async t => {
  const body = new BodyReader(flow, 1024 * KiB, Infinity)
  body.feed(chunk(100 * KiB, 1), false)
  body.feed(chunk(100 * KiB, 2), false)
  const held = (await body.read())!
  body.destroy(new Error('client gone'))
  const next = new BodyReader(flow, 1024 * KiB, Infinity)
  next.feed(chunk(100 * KiB, 3), false)
  next.feed(chunk(100 * KiB, 4), false)
  t.ok(held.every(byte => byte === 1), 'the chunk in the reader\'s hands is untouched by the next body')
  const reused = (await next.read())!
  t.not(reused.buffer, held.buffer)
})
