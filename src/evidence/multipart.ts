import { GatewayError } from '../errors.js'
import type { ByteSource } from '../storage/index.js'

/** Part headers larger than this are refused; real ones are a few hundred bytes. */
export const PART_HEAD_MAX_BYTES = 16 * 1024

export interface PartHead {
  index: number
  name: string
  /** Lowercase, without parameters; `text/plain` when the part gives none (RFC 7578). */
  contentType: string
  /** The part gave a Content-Type of its own. */
  typed: boolean
}

const CR = 13
const LF = 10
const DASH = 45
const END_OF_HEAD = Buffer.from('\r\n\r\n')
const DELIMITER = Symbol('delimiter')
const EMPTY = Buffer.alloc(0)

const malformed = (reason: string): GatewayError =>
  new GatewayError('validation_error', 'malformed multipart body', { details: { body: reason } })

/** The boundary of a `multipart/form-data` Content-Type, or a 400. */
export function multipartBoundary (contentType: string): string {
  const match = /^multipart\/form-data\s*;(.*)$/is.exec(contentType.trim())
  const param = match && /(?:^|;)\s*boundary\s*=\s*(?:"((?:[^"\\]|\\.){1,70})"|([^;\s"]{1,70}))\s*(?:;|$)/i.exec(match[1]!)
  if (!param) throw new GatewayError('validation_error', 'not a multipart/form-data body', { details: { contentType: 'must be multipart/form-data with a boundary' } })
  return param[1] !== undefined ? param[1].replace(/\\(.)/g, '$1') : param[2]!
}

/**
 * A multipart/form-data body (RFC 7578), one part at a time: `nextPart()`
 * gives the next part's head, and the reader itself iterates that part's
 * bytes. A chunk is a view of the body's own chunk (or of the few bytes held
 * back across a chunk edge), valid only until the next is asked for, so media
 * bytes go from the socket's buffer to storage without a copy in between.
 *
 * Written here rather than taken from busboy: busboy needs every chunk to
 * outlive the call that delivers it, i.e. a fresh buffer per chunk, and the
 * body is read to the end, including the epilogue, so the connection stays
 * usable.
 */
export class MultipartReader implements ByteSource {
  /** CRLF "--" boundary: what ends every part (the first may open the body, with no CRLF before it). */
  private readonly delimiter: Buffer
  private readonly chunks: AsyncIterator<Uint8Array>
  private chunk: Buffer = EMPTY
  private pos = 0
  /** The end of the last chunk when it might be the start of a delimiter. */
  private readonly held: Buffer
  private heldLength: number
  private readonly head = Buffer.allocUnsafe(PART_HEAD_MAX_BYTES)
  private state: 'preamble' | 'part' | 'between' | 'done' = 'preamble'
  private parts = 0

  constructor (body: ByteSource, boundary: string, private readonly maxParts: number) {
    this.chunks = body[Symbol.asyncIterator]()
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1')
    this.held = Buffer.alloc(this.delimiter.length)
    this.heldLength = this.held.write('\r\n', 'latin1')
  }

  /**
   * The next part's head, skipping what is left of the current part; null
   * after the closing delimiter. A `maxParts + 1`th part is a 400.
   */
  async nextPart (): Promise<PartHead | null> {
    if (this.state === 'done') return null
    if (this.state !== 'between') while (await this.nextBytes() !== null);
    if (await this.closing()) {
      this.state = 'done'
      while (await this.fill());
      return null
    }
    if (this.parts === this.maxParts) {
      throw new GatewayError('validation_error', 'too many parts', { details: { media: `at most ${this.maxParts - 1} media parts` } })
    }
    const head = parseHead(await this.readHead())
    this.state = 'part'
    return { index: this.parts++, ...head }
  }

  [Symbol.asyncIterator] (): AsyncIterator<Uint8Array> {
    return {
      next: async () => {
        const bytes = this.state === 'part' ? await this.nextBytes() : null
        return bytes === null ? { done: true, value: undefined } : { done: false, value: bytes }
      }
    }
  }

  /** The current part's (or the preamble's) next bytes, or null at its delimiter. */
  private async nextBytes (): Promise<Uint8Array | null> {
    while (true) {
      const found = this.scan()
      if (found === DELIMITER) {
        this.state = 'between'
        return null
      }
      if (found !== undefined) return found
      if (!await this.fill()) throw malformed('the body ends inside a part')
    }
  }

  /**
   * Bytes before the next delimiter in the chunk in hand, the delimiter
   * itself, or undefined when the chunk is used up.
   */
  private scan (): Uint8Array | typeof DELIMITER | undefined {
    const { chunk, delimiter } = this
    if (this.heldLength > 0) {
      const wanted = delimiter.length - this.heldLength
      const n = Math.min(wanted, chunk.length - this.pos)
      if (n === 0) return undefined
      if (chunk.compare(delimiter, this.heldLength, this.heldLength + n, this.pos, this.pos + n) === 0) {
        chunk.copy(this.held, this.heldLength, this.pos, this.pos + n)
        this.pos += n
        this.heldLength += n
        if (n < wanted) return undefined
        this.heldLength = 0
        return DELIMITER
      }
      // A delimiter starts only at CR, which only the held bytes' first can be: all of them are data.
      const data = this.held.subarray(0, this.heldLength)
      this.heldLength = 0
      return data
    }
    if (this.pos === chunk.length) return undefined
    const at = chunk.indexOf(delimiter, this.pos)
    if (at === this.pos) {
      this.pos += delimiter.length
      return DELIMITER
    }
    if (at !== -1) {
      const data = chunk.subarray(this.pos, at)
      this.pos = at
      return data
    }
    let end = chunk.length
    for (let i = Math.max(this.pos, chunk.length - delimiter.length + 1); i < chunk.length; i++) {
      if (chunk[i] === CR && chunk.compare(delimiter, 0, chunk.length - i, i) === 0) {
        end = i
        break
      }
    }
    const data = chunk.subarray(this.pos, end)
    this.heldLength = chunk.copy(this.held, 0, end)
    this.pos = chunk.length
    return data.length > 0 ? data : undefined
  }

  /** After a delimiter: true for the closing "--", false for CRLF (optionally after spaces) and a part. */
  private async closing (): Promise<boolean> {
    let previous = 0
    while (true) {
      if (this.pos === this.chunk.length && !await this.fill()) throw malformed('the body ends after a boundary')
      const byte = this.chunk[this.pos++]!
      if (previous === DASH) {
        if (byte === DASH) return true
        break
      }
      if (previous === CR) {
        if (byte === LF) return false
        break
      }
      if (byte === DASH || byte === CR) previous = byte
      else if (byte !== 0x20 && byte !== 0x09) break
    }
    throw malformed('a boundary is followed by neither CRLF nor "--"')
  }

  /** The header block of a part, up to the empty line (copied: it is parsed after more reads). */
  private async readHead (): Promise<Buffer> {
    // The CRLF that ended the boundary line starts the block, so a part with no headers ends at once.
    let length = this.head.write('\r\n', 'latin1')
    while (true) {
      if (this.pos === this.chunk.length && !await this.fill()) throw malformed('the body ends inside part headers')
      const n = Math.min(this.chunk.length - this.pos, this.head.length - length)
      if (n === 0) throw malformed(`part headers exceed ${PART_HEAD_MAX_BYTES} bytes`)
      this.chunk.copy(this.head, length, this.pos, this.pos + n)
      const at = this.head.subarray(0, length + n).indexOf(END_OF_HEAD, Math.max(0, length - 3))
      if (at >= 0) {
        this.pos += at + END_OF_HEAD.length - length
        return this.head.subarray(2, at + 2)
      }
      this.pos += n
      length += n
    }
  }

  /** The body's next chunk; false at its end. */
  private async fill (): Promise<boolean> {
    const next = await this.chunks.next()
    if (next.done === true) return false
    const c = next.value
    this.chunk = Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength)
    this.pos = 0
    return true
  }
}

/** Name and media type from a part's headers (Content-Type defaults to text/plain, as in RFC 7578). */
function parseHead (block: Buffer): { name: string, contentType: string, typed: boolean } {
  let name = ''
  let contentType = 'text/plain'
  let typed = false
  for (const line of block.toString('latin1').split('\r\n')) {
    const colon = line.indexOf(':')
    if (colon <= 0) {
      if (line.trim() !== '') throw malformed('a part header without a colon')
      continue
    }
    const field = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    if (field === 'content-disposition') name = dispositionName(value)
    else if (field === 'content-type') {
      contentType = value.split(';')[0]!.trim().toLowerCase() || contentType
      typed = true
    }
  }
  return { name, contentType, typed }
}

/**
 * The `name` parameter of a Content-Disposition value, read as RFC 7578 and
 * RFC 9110 §5.6.6 give it: parameters split at `;` outside quoted strings,
 * so a `name=` inside a quoted `filename` (`filename="x; name=envelope"`) is
 * text of that filename, not a second name. A parameter given twice, an
 * unterminated quoted string or text a parameter cannot be is refused: two
 * readers of this part must find the same name.
 */
function dispositionName (value: string): string {
  const params = dispositionParams(value)
  const raw = params.get('name') ?? ''
  // Header bytes were read as latin1; names are sent as UTF-8.
  return Buffer.from(raw, 'latin1').toString('utf8')
}

const PARAM = /\s*;\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;"\s]*))\s*/y

function dispositionParams (value: string): Map<string, string> {
  const params = new Map<string, string>()
  const type = /^[!#$%&'*+.^_`|~0-9A-Za-z-]*/.exec(value)![0]
  PARAM.lastIndex = type.length
  while (PARAM.lastIndex < value.length) {
    const at = PARAM.lastIndex
    const match = PARAM.exec(value)
    if (match === null) {
      if (value.slice(at).trim() === '' || value.slice(at).trim() === ';') break
      throw malformed('a Content-Disposition parameter that is not name=value or name="quoted value"')
    }
    const key = match[1]!.toLowerCase()
    if (params.has(key)) throw malformed(`a Content-Disposition that gives ${key} more than once`)
    params.set(key, match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3]!)
  }
  return params
}

/** Reads a small part whole, refusing more than `limit` bytes. */
export async function readSmallPart (part: ByteSource, limit: number, key: string): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of part) {
    size += chunk.length
    if (size > limit) throw new GatewayError('validation_error', `${key} part too large`, { details: { [key]: `must not exceed ${limit} bytes` } })
    chunks.push(Buffer.from(chunk))
  }
  return Buffer.concat(chunks, size).toString('utf8')
}
