import t from 'tap'
import { randomBytes } from 'node:crypto'
import { MultipartReader, multipartBoundary, PART_HEAD_MAX_BYTES, readSmallPart } from '../../src/evidence/multipart.js'
import { multipartBody, BOUNDARY, type PartSpec } from '../helpers/multipart.js'

/**
 * Yields `body` in chunks of the given sizes (cycled) from ONE reused buffer,
 * as the request body does: a reader that kept a chunk past the next read
 * would see it overwritten.
 */
async function * reusing (body: Buffer, sizes: number[]): AsyncGenerator<Uint8Array> {
  const buffer = Buffer.alloc(Math.max(...sizes))
  for (let at = 0, i = 0; at < body.length; i++) {
    const n = Math.min(sizes[i % sizes.length]!, body.length - at)
    body.copy(buffer, 0, at, at + n)
    yield buffer.subarray(0, n)
    buffer.fill(0xee)
    at += n
  }
}

interface Read { name: string, contentType: string, typed: boolean, data: Buffer }

async function readAll (source: AsyncIterable<Uint8Array>, maxParts = 10, boundary = BOUNDARY): Promise<Read[]> {
  const reader = new MultipartReader(source, boundary, maxParts)
  const parts: Read[] = []
  for (let head = await reader.nextPart(); head !== null; head = await reader.nextPart()) {
    const chunks: Buffer[] = []
    for await (const c of reader) chunks.push(Buffer.from(c))
    parts.push({ name: head.name, contentType: head.contentType, typed: head.typed, data: Buffer.concat(chunks) })
  }
  return parts
}

const rejection = (reason: RegExp): { code: string, details: { body: RegExp } } => ({ code: 'validation_error', details: { body: reason } })

// Media bytes full of near-delimiters: CRLF, CRLF--, CRLF-- plus most of the boundary.
const tricky = Buffer.concat([
  randomBytes(100), Buffer.from('\r\n'), randomBytes(5), Buffer.from('\r\n--'), randomBytes(3),
  Buffer.from(`\r\n--${BOUNDARY.slice(0, -1)}`), Buffer.from('\r\r\n\r\n-'), randomBytes(50), Buffer.from(`--${BOUNDARY}`), Buffer.from('\r')
])
const specs: PartSpec[] = [
  { name: 'envelope', contentType: 'application/json', data: '{"a":1}' },
  { name: 'media', contentType: 'video/mp4', data: tricky, filename: 'c.mp4' },
  { name: 'media', contentType: 'Video/H264; profile=x', data: Buffer.alloc(0) }
]
const body = multipartBody(specs)
const expected = [
  { name: 'envelope', contentType: 'application/json', typed: true, data: Buffer.from('{"a":1}') },
  { name: 'media', contentType: 'video/mp4', typed: true, data: tricky },
  { name: 'media', contentType: 'video/h264', typed: true, data: Buffer.alloc(0) }
]

t.test('every split of the body into two chunks reads the same parts', async t => {
  for (let cut = 1; cut < body.length; cut++) {
    const parts = await readAll(reusing(body, [cut, body.length]))
    if (!t.same(parts, expected, `cut at ${cut}`)) break
  }
})

t.test('one byte at a time, and odd chunk sizes, read the same parts', async t => {
  t.same(await readAll(reusing(body, [1])), expected)
  t.same(await readAll(reusing(body, [3, 7, 64, 2])), expected)
  t.same(await readAll(reusing(body, [body.length])), expected)
})

t.test('a preamble, padding after a boundary, a part without headers and an epilogue', async t => {
  const raw = Buffer.from(`preamble\r\n--${BOUNDARY} \t\r\n\r\nplain\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="n\\"q"\r\n\r\nx\r\n--${BOUNDARY}--\r\nepilogue`)
  const reads: number[] = []
  const counting = async function * (): AsyncGenerator<Uint8Array> { for await (const c of reusing(raw, [5])) { reads.push(c.length); yield c } }
  t.same(await readAll(counting()), [
    { name: '', contentType: 'text/plain', typed: false, data: Buffer.from('plain') },
    { name: 'n"q', contentType: 'text/plain', typed: false, data: Buffer.from('x') }
  ])
  t.equal(reads.reduce((a, b) => a + b, 0), raw.length, 'the epilogue was read to the end')
})

t.test('a part left unread is skipped by nextPart', async t => {
  const reader = new MultipartReader(reusing(body, [10]), BOUNDARY, 10)
  t.equal((await reader.nextPart())?.name, 'envelope')
  t.equal((await reader.nextPart())?.name, 'media')
  const third = await reader.nextPart()
  t.same(third, { index: 2, name: 'media', contentType: 'video/h264', typed: true })
  t.equal(await reader.nextPart(), null)
  t.equal(await reader.nextPart(), null)
})

t.test('malformed bodies are 400 validation_error with the reason', async t => {
  const truncated = body.subarray(0, body.length - 20)
  await t.rejects(readAll(reusing(truncated, [100])), rejection(/ends inside a part/))
  await t.rejects(readAll(reusing(Buffer.from('no boundary at all'), [4])), rejection(/ends inside a part/))
  await t.rejects(readAll(reusing(Buffer.from(`--${BOUNDARY}`), [4])), rejection(/ends after a boundary/))
  await t.rejects(readAll(reusing(Buffer.from(`--${BOUNDARY}x\r\n`), [4])), rejection(/neither CRLF nor "--"/))
  await t.rejects(readAll(reusing(Buffer.from(`--${BOUNDARY}\r\nContent-Type: a`), [4])), rejection(/ends inside part headers/))
  await t.rejects(readAll(reusing(Buffer.from(`--${BOUNDARY}\r\nno colon here\r\n\r\nx\r\n--${BOUNDARY}--`), [4])), rejection(/without a colon/))
  const huge = Buffer.from(`--${BOUNDARY}\r\nX-Pad: ${'p'.repeat(PART_HEAD_MAX_BYTES)}\r\n\r\nx\r\n--${BOUNDARY}--`)
  await t.rejects(readAll(reusing(huge, [4096])), rejection(/part headers exceed 16384 bytes/))
})

t.test('more parts than maxParts is a 400 naming the media limit', async t => {
  const four = multipartBody([specs[0]!, specs[2]!, specs[2]!, specs[2]!])
  t.equal((await readAll(reusing(four, [50]), 4)).length, 4)
  await t.rejects(readAll(reusing(four, [50]), 3), { code: 'validation_error', details: { media: 'at most 2 media parts' } })
})

t.test('the boundary comes from the Content-Type, quoted or not; anything else is a 400', async t => {
  t.equal(multipartBoundary('multipart/form-data; boundary=abc-123'), 'abc-123')
  t.equal(multipartBoundary('Multipart/Form-Data; charset=utf-8; boundary="a b\\"c"'), 'a b"c')
  for (const bad of ['application/json', 'multipart/form-data', 'multipart/form-data; boundary=', 'multipart/mixed; boundary=x', `multipart/form-data; boundary=${'b'.repeat(71)}`]) {
    t.throws(() => multipartBoundary(bad), { code: 'validation_error', details: { contentType: 'must be multipart/form-data with a boundary' } }, bad)
  }
  const custom = multipartBody([specs[0]!], 'a b"c')
  t.same((await readAll(reusing(custom, [9]), 10, 'a b"c'))[0]?.data, Buffer.from('{"a":1}'))
})

t.test('readSmallPart copies the part and refuses more than its limit', async t => {
  const reader = new MultipartReader(reusing(body, [3]), BOUNDARY, 10)
  await reader.nextPart()
  t.equal(await readSmallPart(reader, 7, 'envelope'), '{"a":1}')
  await reader.nextPart()
  await t.rejects(readSmallPart(reader, 100, 'envelope'), { code: 'validation_error', details: { envelope: 'must not exceed 100 bytes' } })
})

/** A body of one part whose Content-Disposition is `disposition`. */
const disposed = (disposition: string): Buffer => Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: ${disposition}\r\nContent-Type: video/mp4\r\n\r\nxyz\r\n--${BOUNDARY}--\r\n`)

t.test('a part\'s name is its own parameter, never text inside a quoted one', async t => {
  const nameOf = async (disposition: string): Promise<string> => (await readAll(reusing(disposed(disposition), [4096])))[0]!.name
  t.equal(await nameOf('form-data; filename="x; name=envelope"; name="media"'), 'media', 'name= inside a quoted filename, before the real name')
  t.equal(await nameOf('form-data; name="media"; filename="a;name=envelope.mp4"'), 'media', 'name= inside a quoted filename, after it')
  t.equal(await nameOf('form-data; filename="\\"; name=envelope"; name=media'), 'media', 'an escaped quote does not end the filename')
  t.equal(await nameOf('form-data; filename="clip.mp4"'), '', 'a filename alone names nothing')
  t.equal(await nameOf('form-data;name=envelope'), 'envelope', 'a token value, no spaces')
  t.equal(await nameOf('form-data; NAME="media" ; filename=clip.mp4;'), 'media', 'any case, spaces and a trailing semicolon')
})

t.test('a disposition two readers could read differently is a 400', async t => {
  for (const disposition of [
    'form-data; name="media"; name="envelope"',
    'form-data; name="media"; filename="unterminated',
    'form-data; name="media" junk'
  ]) {
    await t.rejects(readAll(reusing(disposed(disposition), [4096])), rejection(/Content-Disposition/), disposition)
  }
})
