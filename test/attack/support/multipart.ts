import fc from 'fast-check'
import { createHash } from 'node:crypto'

/**
 * multipart/form-data as an attacker writes it: every piece of the framing
 * (boundaries, line ends, part headers, order, the closing delimiter) can be
 * wrong on its own, so a generated body breaks one rule at a time, or none.
 */

export interface Part {
  /** Raw header lines of the part, without line ends. */
  headers: string[]
  body: Buffer
}

export interface Framing {
  /** The boundary named in Content-Type (undefined: none named). */
  declared: string | undefined
  /** The boundary the body uses. */
  used: string
  lineEnd: '\r\n' | '\n'
  /** Leave out the blank line between a part's headers and its body. */
  noBlankLine: boolean
  preamble: string
  epilogue: string
  closing: boolean
  /** Cut the body here (a fraction of its length), Content-Length matching the cut. */
  truncate: number | undefined
}

export const GOOD_BOUNDARY = 'attack-boundary-4f1c'

export function contentTypeOf (f: Framing): string {
  return f.declared === undefined ? 'multipart/form-data' : `multipart/form-data; boundary=${f.declared}`
}

export function multipart (parts: readonly Part[], f: Framing): Buffer {
  const chunks: Buffer[] = [Buffer.from(f.preamble)]
  for (const p of parts) {
    chunks.push(Buffer.from(`--${f.used}${f.lineEnd}${p.headers.map(h => `${h}${f.lineEnd}`).join('')}${f.noBlankLine ? '' : f.lineEnd}`, 'latin1'))
    chunks.push(p.body, Buffer.from(f.lineEnd))
  }
  if (f.closing) chunks.push(Buffer.from(`--${f.used}--${f.lineEnd}`))
  chunks.push(Buffer.from(f.epilogue))
  const body = Buffer.concat(chunks)
  return f.truncate === undefined ? body : body.subarray(0, Math.floor(f.truncate * body.length))
}

const boundaryText = fc.constantFrom('', ' ', 'a b', '"quoted"', '"unterminated', 'x'.repeat(70), 'x'.repeat(71), 'x'.repeat(5000), '--', '\u00e9', 'b;c', 'b, c')

/** Mostly sound framing; else one thing wrong with it. */
export const framing: fc.Arbitrary<Framing> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Framing>({ declared: GOOD_BOUNDARY, used: GOOD_BOUNDARY, lineEnd: '\r\n', noBlankLine: false, preamble: '', epilogue: '', closing: true, truncate: undefined }) },
  { weight: 2, arbitrary: fc.record<Framing>({
    declared: fc.oneof(fc.constant(GOOD_BOUNDARY), fc.constant(undefined), boundaryText, fc.constant(`"${GOOD_BOUNDARY}"`)),
    used: fc.oneof(fc.constant(GOOD_BOUNDARY), fc.constant('other-boundary'), fc.constant(GOOD_BOUNDARY.slice(0, -1))),
    lineEnd: fc.constantFrom<'\r\n' | '\n'>('\r\n', '\n'),
    noBlankLine: fc.boolean(),
    preamble: fc.constantFrom('', 'preamble text\r\n', `--${GOOD_BOUNDARY}x\r\n`, '\r\n\r\n'),
    epilogue: fc.constantFrom('', 'epilogue', `\r\n--${GOOD_BOUNDARY}\r\n`),
    closing: fc.boolean(),
    truncate: fc.oneof(fc.constant(undefined), fc.double({ min: 0, max: 1, noNaN: true }))
  }) }
)

export function disposition (name: string, filename?: string): string {
  return `Content-Disposition: form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}`
}

export function envelopePart (text: string): Part {
  return { headers: [disposition('envelope'), 'Content-Type: application/json'], body: Buffer.from(text) }
}

export function mediaPart (body: Buffer, contentType = 'video/mp4'): Part {
  return { headers: [disposition('media', 'clip.mp4'), `Content-Type: ${contentType}`], body }
}

export const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

/** What can be wrong with the list of parts, one thing at a time. */
export type PartsFault =
  | 'none' | 'media-first' | 'second-envelope' | 'no-envelope' | 'unknown-name' | 'no-disposition' | 'unquoted-name'
  | 'huge-part-header' | 'many-part-headers' | 'media-type' | 'too-many-media' | 'envelope-type' | 'empty-envelope' | 'header-injection'
  | 'no-parts' | 'header-no-colon' | 'two-dispositions' | 'nul-in-header' | 'filename-path' | 'boundary-in-media'

export const partsFault: fc.Arbitrary<PartsFault> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<PartsFault>('none') },
  { weight: 2, arbitrary: fc.constantFrom<PartsFault>('media-first', 'second-envelope', 'no-envelope', 'unknown-name', 'no-disposition', 'unquoted-name', 'huge-part-header', 'many-part-headers', 'media-type', 'too-many-media', 'envelope-type', 'empty-envelope', 'header-injection',
    'no-parts', 'header-no-colon', 'two-dispositions', 'nul-in-header', 'filename-path', 'boundary-in-media') }
)

/** The parts with `fault` applied; `maxMedia` is the gateway's EVIDENCE_MAX_MEDIA. */
export function faultyParts (envelope: Part, media: Part[], fault: PartsFault, maxMedia: number): Part[] {
  switch (fault) {
    case 'none': return [envelope, ...media]
    case 'media-first': return [mediaPart(Buffer.from('x')), envelope, ...media]
    case 'second-envelope': return [envelope, ...media, envelope]
    case 'no-envelope': return media.length > 0 ? media : [mediaPart(Buffer.from('x'))]
    case 'unknown-name': return [envelope, { headers: [disposition('evidence'), 'Content-Type: video/mp4'], body: Buffer.from('x') }, ...media]
    case 'no-disposition': return [{ headers: ['Content-Type: application/json'], body: envelope.body }, ...media]
    case 'unquoted-name': return [{ headers: ['Content-Disposition: form-data; name=envelope', 'Content-Type: application/json'], body: envelope.body }, ...media]
    case 'huge-part-header': return [{ headers: [...envelope.headers, `X-Pad: ${'p'.repeat(100_000)}`], body: envelope.body }, ...media]
    case 'many-part-headers': return [{ headers: [...envelope.headers, ...Array.from({ length: 2000 }, (_, i) => `X-H${i}: v`)], body: envelope.body }, ...media]
    case 'media-type': return [envelope, mediaPart(Buffer.from('x'), 'image/png'), ...media]
    case 'too-many-media': return [envelope, ...Array.from({ length: maxMedia + 1 }, () => mediaPart(Buffer.from('x')))]
    case 'envelope-type': return [{ headers: [disposition('envelope'), 'Content-Type: text/plain'], body: envelope.body }, ...media]
    case 'empty-envelope': return [{ headers: envelope.headers, body: Buffer.alloc(0) }, ...media]
    case 'no-parts': return []
    case 'header-no-colon': return [{ headers: [...envelope.headers, 'X-Broken header line'], body: envelope.body }, ...media]
    case 'two-dispositions': return [{ headers: [disposition('envelope'), disposition('media', 'clip.mp4'), 'Content-Type: application/json'], body: envelope.body }, ...media]
    case 'nul-in-header': return [{ headers: [`${disposition('envelope')}\u0000`, 'Content-Type: application/json'], body: envelope.body }, ...media]
    case 'filename-path': return [envelope, ...media.map(m => ({ headers: [disposition('media', '../../../../tmp/evil.mp4'), 'Content-Type: video/mp4'], body: m.body }))]
    // The boundary inside a part's bytes, but not after a line end: data, not a delimiter.
    case 'boundary-in-media': return [envelope, ...media.map(m => ({ headers: m.headers, body: Buffer.concat([m.body, Buffer.from(`--${GOOD_BOUNDARY}`)]) }))]
    case 'header-injection': return [{ headers: [`${disposition('envelope')}\r\nContent-Disposition: form-data; name="media"`, 'Content-Type: application/json'], body: envelope.body }, ...media]
  }
}
