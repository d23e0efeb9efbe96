import fc from 'fast-check'
import type { Header, RawRequest } from './wire.js'

/**
 * Pieces of generated requests every route shares: how the body is framed,
 * how its bytes are spoiled, and the header values that try each header's
 * grammar.
 */

export type Framing = 'length' | 'chunked'

/** A body in Content-Length or chunked framing, the chunks split where the generator says. */
export function framed (req: Omit<RawRequest, 'body' | 'chunks'>, body: Buffer, framing: Framing, cuts: readonly number[]): RawRequest {
  if (framing === 'length') return { ...req, body }
  const points = [...new Set(cuts.map(c => Math.floor(c * body.length)))].sort((a, b) => a - b)
  const chunks: Buffer[] = []
  let at = 0
  for (const p of [...points, body.length]) {
    chunks.push(body.subarray(at, p))
    at = p
  }
  return { ...req, chunks }
}

export const framing = fc.record({
  framing: fc.constantFrom<Framing>('length', 'length', 'length', 'chunked'),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 4 })
})

/** Ways a body's bytes go wrong after it was written: cut, padded, re-encoded, replaced. */
export type Spoil = 'none' | 'truncate' | 'bom' | 'trailing' | 'invalid-utf8' | 'empty' | 'null' | 'array' | 'string' | 'utf16'

export const spoil = fc.record({
  kind: mostly<Spoil>('none', fc.constantFrom<Spoil>('truncate', 'bom', 'trailing', 'invalid-utf8', 'empty', 'null', 'array', 'string', 'utf16')),
  at: fc.double({ min: 0, max: 1, noNaN: true })
})

export function spoiled (text: string, how: { kind: Spoil, at: number }): Buffer {
  const bytes = Buffer.from(text)
  const cut = Math.floor(how.at * bytes.length)
  switch (how.kind) {
    case 'none': return bytes
    case 'truncate': return bytes.subarray(0, cut)
    case 'bom': return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes])
    case 'trailing': return Buffer.concat([bytes, Buffer.from(' {"asset_id":"x"}')])
    case 'invalid-utf8': return Buffer.concat([bytes.subarray(0, cut), Buffer.from([0xff, 0xc3, 0x28, 0xed, 0xa0, 0x80]), bytes.subarray(cut)])
    case 'empty': return Buffer.alloc(0)
    case 'null': return Buffer.from('null')
    case 'array': return Buffer.from(`[${text}]`)
    case 'string': return Buffer.from(JSON.stringify(text))
    case 'utf16': return Buffer.from(text, 'utf16le')
  }
}

/** Header values that test a header's grammar; `undefined` leaves the header out. */
export const headerValue: fc.Arbitrary<string | Buffer | undefined> = fc.constantFrom<string | Buffer | undefined>(
  undefined, '', ' ', 'x'.repeat(200), 'x'.repeat(201), 'a b', 'a,b', '../..', '%2f', '\t', 'a\tb',
  Buffer.from([0xc3, 0xa9]), Buffer.from([0xff, 0xfe]), Buffer.from('\u202e', 'utf8'), 'x'.repeat(3000)
)

/** Mostly `right` (so the request gets past this check to the next), else one of `wrong`. */
export function mostly<T> (right: T, wrong: fc.Arbitrary<T>): fc.Arbitrary<T> {
  return fc.oneof({ arbitrary: fc.constant(right), weight: 5 }, { arbitrary: wrong, weight: 1 })
}

export const contentTypes = (right: string): fc.Arbitrary<string | undefined> => mostly<string | undefined>(right, fc.constantFrom<string | undefined>(
  `${right}; charset=utf-8`, right.toUpperCase(), `${right};`, `${right}x`, 'text/plain',
  'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '', undefined, `${right}, text/plain`
))

/** Extra headers anyone may add: unknown, padded, repeated where a repeat is allowed. */
export const extraHeaders: fc.Arbitrary<Header[]> = fc.array(
  fc.tuple(
    fc.constantFrom('Accept', 'X-Forwarded-For', 'X-Real-IP', 'Cookie', 'Origin', 'Expect', 'Connection', 'Accept-Encoding', 'X-Custom', 'Range', 'If-None-Match', 'Upgrade'),
    fc.oneof(headerValue.map(v => v ?? 'x'), fc.constantFrom('100-continue', 'close', 'keep-alive', 'websocket', 'gzip, br', 'bytes=0-1', '*'))
  ),
  { maxLength: 6 }
)

/** An X-Request-Id: mostly a fresh valid one, sometimes one outside its grammar or none. */
export const requestId: fc.Arbitrary<string | Buffer | undefined> = fc.oneof(
  { arbitrary: fc.uuid().map(u => `attack-${u}`), weight: 8 },
  { arbitrary: headerValue, weight: 1 }
)

export function withHeader (headers: Header[], name: string, value: string | Buffer | undefined): Header[] {
  return value === undefined ? headers : [...headers, [name, value]]
}
