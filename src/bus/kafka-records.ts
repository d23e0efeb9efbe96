import type { Splice } from './types.js'

/**
 * The records of one Kafka record batch (magic 2), measured and written
 * without kafkajs: what kafka-produce.ts puts in a batch as they are, or
 * compressed.
 */

export interface Message {
  key?: Buffer | string | null
  value: Buffer | string | Splice | null
  headers?: Record<string, Buffer | string | Array<Buffer | string> | undefined>
  timestamp?: string | number
}

export function varIntSize (value: number): number {
  let v = ((value << 1) ^ (value >> 31)) >>> 0
  let bytes = 1
  while (v >= 0x80) { bytes++; v >>>= 7 }
  return bytes
}

/**
 * Strings up to this length are measured and copied in JavaScript when they
 * are ASCII: a record's key and its four headers are, and a call into
 * Buffer's C++ for each cost more than the copy (Buffer#write and
 * Buffer.byteLength were 2% of a request's CPU).
 */
const SHORT = 64

export function utf8Length (s: string): number {
  if (s.length > SHORT) return Buffer.byteLength(s, 'utf8')
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s, 'utf8')
  return s.length
}

export function byteLength (value: Buffer | string | Splice | null | undefined): number {
  if (value === null || value === undefined) return -1
  if (typeof value === 'string') return utf8Length(value)
  return Buffer.isBuffer(value) ? value.length : value.end + utf8Length(value.tail)
}

/** Sizes of one partition's records: `lengths` gets each record's body length; returns the records' bytes. */
export function measureRecords (messages: Message[], lengths: number[]): number {
  let total = 0
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!
    const key = byteLength(m.key)
    const value = byteLength(m.value)
    let body = 1 + 1 + varIntSize(i) + varIntSize(key) + Math.max(key, 0) + varIntSize(value) + Math.max(value, 0)
    let count = 0
    const headers = m.headers
    if (headers !== undefined) {
      for (const k of Object.keys(headers)) {
        const kl = utf8Length(k)
        const vl = byteLength(headers[k] as Buffer | string)
        body += varIntSize(kl) + kl + varIntSize(vl) + Math.max(vl, 0)
        count++
      }
    }
    body += varIntSize(count)
    lengths.push(body)
    total += varIntSize(body) + body
  }
  return total
}

export class Writer {
  offset = 0
  constructor (readonly buf: Buffer) {}

  int8 (v: number): void { this.buf[this.offset++] = v & 0xff }
  int16 (v: number): void { this.buf.writeInt16BE(v, this.offset); this.offset += 2 }
  int32 (v: number): void { this.buf.writeInt32BE(v, this.offset); this.offset += 4 }
  long (high: number, low: number): void { this.buf.writeInt32BE(high, this.offset); this.buf.writeInt32BE(low, this.offset + 4); this.offset += 8 }

  varInt (value: number): void {
    let v = ((value << 1) ^ (value >> 31)) >>> 0
    while (v >= 0x80) { this.buf[this.offset++] = (v & 0x7f) | 0x80; v >>>= 7 }
    this.buf[this.offset++] = v
  }

  string16 (s: string): void {
    const n = Buffer.byteLength(s, 'utf8')
    this.int16(n)
    this.offset += this.buf.write(s, this.offset, n, 'utf8')
  }

  /** `s`, whose UTF-8 length is `length`; a short ASCII one (its length in bytes its length) copied here. */
  utf8 (s: string, length: number): void {
    if (length === s.length && length <= SHORT) {
      const buf = this.buf
      const at = this.offset
      for (let i = 0; i < length; i++) buf[at + i] = s.charCodeAt(i)
      this.offset = at + length
    } else {
      this.offset += this.buf.write(s, this.offset, length, 'utf8')
    }
  }

  /** A varint length, then the bytes (length -1 for null). */
  varBytes (value: Buffer | string | Splice | null | undefined, length: number): void {
    this.varInt(length)
    if (length <= 0) return
    if (typeof value === 'string') {
      this.utf8(value, length)
    } else if (Buffer.isBuffer(value)) {
      this.offset += value.copy(this.buf, this.offset)
    } else {
      const { bytes, end, tail } = value!
      this.offset += bytes.copy(this.buf, this.offset, 0, end)
      this.utf8(tail, length - end)
    }
  }

  /** One partition's records, measured by measureRecords: `lengths` from `at` on are theirs. */
  records (messages: Message[], lengths: number[], at: number): void {
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!
      this.varInt(lengths[at + i]!)
      this.int8(0) // attributes
      this.int8(0) // timestampDelta, a varlong 0
      this.varInt(i)
      this.varBytes(m.key, byteLength(m.key))
      this.varBytes(m.value, byteLength(m.value))
      const keys = m.headers === undefined ? [] : Object.keys(m.headers)
      this.varInt(keys.length)
      for (const k of keys) {
        const hv = m.headers![k] as Buffer | string
        this.varBytes(k, utf8Length(k))
        this.varBytes(hv, byteLength(hv))
      }
    }
  }
}
