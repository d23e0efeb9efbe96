import { createRequire } from 'node:module'
import { crc32c } from './crc32c.js'
import { FRAME_HEADROOM, framed, framedWriteEncoder, type EncoderLike, type WriteEncoder } from './kafka-frame.js'
import { spliceText, type Splice } from './types.js'

/**
 * A faster encoding of kafkajs's Produce request (API versions 3 to 7, which
 * all use one body), written into kafkajs in place of its own.
 *
 * kafkajs builds every record, header and batch in an encoder of its own
 * (each a zero-filled buffer, grown by doubling), copies each into its
 * parent, four levels deep, and computes the batch's CRC32C a byte at a
 * time: measured, about 30 µs of CPU per 2 KiB record, as much as all the
 * rest of a telemetry request. This one measures the request first, then
 * writes it into one buffer and runs a CRC32C eight bytes at a time.
 * The bytes are the same as kafkajs's (test/bus/kafka-produce.test.ts
 * compares them); kafkajs still does everything else (connections,
 * metadata, partitioning, the idempotent producer's sequence numbers,
 * retries, responses). Requests it does not cover (compression, message
 * timestamps, header values given as lists) go to kafkajs's own encoder.
 */

interface Message {
  key?: Buffer | string | null
  value: Buffer | string | Splice | null
  headers?: Record<string, Buffer | string | Array<Buffer | string> | undefined>
  timestamp?: string | number
}

interface PartitionData { partition: number, firstSequence?: number, messages: Message[] }
interface TopicData { topic: string, partitions: PartitionData[] }
interface Long { getHighBits(): number, getLowBits(): number }
/** kafkajs passes the producer id as a number (from InitProducerId), a string or its Long. */
type Int64 = number | string | bigint | Long

/** [high, low] signed 32-bit halves, as kafkajs's writeInt64 writes them. */
function int64Parts (v: Int64 | undefined): [number, number] {
  if (v === undefined) return [-1, -1]
  if (typeof v === 'number' && Number.isSafeInteger(v)) return [Math.floor(v / 0x100000000), v | 0]
  if (typeof v === 'object') return [v.getHighBits(), v.getLowBits()]
  const big = BigInt.asIntN(64, BigInt(v))
  return [Number(big >> 32n), Number(BigInt.asIntN(32, big))]
}

interface ProduceArgs {
  acks: number
  timeout: number
  transactionalId?: string | null
  producerId?: Int64
  producerEpoch?: number
  compression?: number
  topicData: TopicData[]
}

type ProduceRequest = { encode: () => Promise<EncoderLike> } & Record<string, unknown>
type ProduceV3 = (args: ProduceArgs) => ProduceRequest

const MAGIC_BYTE = 2
const TRANSACTIONAL_MASK = 16
/** The batch header from partitionLeaderEpoch to the record count, and the 12 bytes before it. */
const BATCH_HEADER = 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4
const BATCH_PREFIX = 8 + 4

function varIntSize (value: number): number {
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

function utf8Length (s: string): number {
  if (s.length > SHORT) return Buffer.byteLength(s, 'utf8')
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s, 'utf8')
  return s.length
}

function byteLength (value: Buffer | string | Splice | null | undefined): number {
  if (value === null || value === undefined) return -1
  if (typeof value === 'string') return utf8Length(value)
  return Buffer.isBuffer(value) ? value.length : value.end + utf8Length(value.tail)
}

/** Sizes of one partition's records: `lengths` gets each record's body length; returns the records' bytes. */
function measureRecords (messages: Message[], lengths: number[]): number {
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

class Writer {
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
}

const bytesOrNull = (v: unknown): boolean => v === null || v === undefined || typeof v === 'string' || Buffer.isBuffer(v)
const validSplice = (v: unknown): v is Splice => {
  const s = v as Partial<Splice> | null
  return typeof s === 'object' && s !== null && Buffer.isBuffer(s.bytes) && typeof s.tail === 'string' && Number.isInteger(s.end) && s.end! >= 0 && s.end! <= s.bytes.length
}
const valueOrNull = (v: unknown): boolean => bytesOrNull(v) || validSplice(v)

/** `args` with every Splice joined, for kafkajs's own encoder. */
function joinedValues (args: ProduceArgs): ProduceArgs {
  const join = (m: Message): Message => validSplice(m.value) ? { ...m, value: spliceText(m.value) } : m
  return { ...args, topicData: args.topicData.map(t => ({ ...t, partitions: t.partitions.map(p => ({ ...p, messages: p.messages.map(join) })) })) }
}

/**
 * True when every message is one this encoder writes exactly as kafkajs
 * would: keys and values strings, Buffers or null, header values strings
 * or Buffers, no timestamps, no compression. Anything else is kafkajs's to
 * encode (or to refuse, as it does a null header value).
 */
function covered (args: ProduceArgs): boolean {
  if ((args.compression ?? 0) !== 0) return false
  for (const t of args.topicData) {
    for (const p of t.partitions) {
      for (const m of p.messages) {
        if (m.timestamp !== undefined && m.timestamp !== null) return false
        if (!bytesOrNull(m.key) || !valueOrNull(m.value)) return false
        const headers = m.headers
        if (headers === undefined) continue
        if (typeof headers !== 'object' || headers === null) return false
        for (const k of Object.keys(headers)) {
          const v = headers[k]
          if (typeof v !== 'string' && !Buffer.isBuffer(v)) return false
        }
      }
    }
  }
  return true
}

/**
 * The request body kafkajs's v3 `encode()` would produce, in one buffer,
 * after `headroom` bytes left free for the request's frame (kafka-frame.ts).
 */
export function encodeProduceBody (args: ProduceArgs, now = Date.now(), headroom = 0): Buffer {
  const transactionalId = args.transactionalId ?? null
  const producerId = args.producerId
  const producerEpoch = args.producerEpoch ?? 0
  const lengths: number[][] = []
  const recordBytes: number[][] = []
  let size = 2 + (transactionalId === null ? 0 : Buffer.byteLength(transactionalId, 'utf8')) + 2 + 4 + 4
  for (const t of args.topicData) {
    size += 2 + Buffer.byteLength(t.topic, 'utf8') + 4
    const tl: number[] = []
    const tr: number[] = []
    for (const p of t.partitions) {
      const records = measureRecords(p.messages, tl)
      tr.push(records)
      size += 4 + 4 + BATCH_PREFIX + BATCH_HEADER + records
    }
    lengths.push(tl)
    recordBytes.push(tr)
  }
  const w = new Writer(Buffer.allocUnsafe(headroom + size))
  w.offset = headroom
  if (transactionalId === null) w.int16(-1)
  else w.string16(transactionalId)
  w.int16(args.acks)
  w.int32(args.timeout)
  w.int32(args.topicData.length)
  const [high, low] = int64Parts(producerId)
  const [nowHigh, nowLow] = int64Parts(now)
  const attributes = args.transactionalId ? TRANSACTIONAL_MASK : 0
  for (let ti = 0; ti < args.topicData.length; ti++) {
    const t = args.topicData[ti]!
    w.string16(t.topic)
    w.int32(t.partitions.length)
    let li = 0
    for (let pi = 0; pi < t.partitions.length; pi++) {
      const p = t.partitions[pi]!
      const batchLength = BATCH_HEADER + recordBytes[ti]![pi]!
      w.int32(p.partition)
      w.int32(BATCH_PREFIX + batchLength)
      w.long(0, 0) // firstOffset
      w.int32(batchLength)
      w.int32(0) // partitionLeaderEpoch
      w.int8(MAGIC_BYTE)
      const crcAt = w.offset
      w.offset += 4
      w.int16(attributes)
      w.int32(p.messages.length - 1)
      w.long(nowHigh, nowLow) // firstTimestamp
      w.long(nowHigh, nowLow) // maxTimestamp
      w.long(high, low)
      w.int16(producerEpoch)
      w.int32(p.firstSequence ?? 0)
      w.int32(p.messages.length)
      for (let i = 0; i < p.messages.length; i++) {
        const m = p.messages[i]!
        w.varInt(lengths[ti]![li++]!)
        w.int8(0) // attributes
        w.int8(0) // timestampDelta, a varlong 0
        w.varInt(i)
        w.varBytes(m.key, byteLength(m.key))
        w.varBytes(m.value, byteLength(m.value))
        const keys = m.headers === undefined ? [] : Object.keys(m.headers)
        w.varInt(keys.length)
        for (const k of keys) {
          const hv = m.headers![k] as Buffer | string
          w.varBytes(k, utf8Length(k))
          w.varBytes(hv, byteLength(hv))
        }
      }
      w.buf.writeUInt32BE(crc32c(w.buf, crcAt + 4, w.offset), crcAt)
    }
  }
  if (w.offset !== headroom + size) throw new Error(`produce request: wrote ${w.offset - headroom} bytes of ${size}`)
  return w.buf
}

/**
 * kafkajs's v3 request builder with our body; `original` for what it does
 * not cover. The result keeps kafkajs's own fields (apiKey, apiVersion...).
 */
export function fastProduce (original: ProduceV3, Encoder: new () => EncoderLike): ProduceV3 {
  return (args: ProduceArgs) => {
    if (!covered(args)) return original(joinedValues(args))
    const request = original(args)
    return {
      ...request,
      encode: async () => {
        return framed(new Encoder(), encodeProduceBody(args, Date.now(), FRAME_HEADROOM), FRAME_HEADROOM)
      }
    }
  }
}

let installed: boolean | undefined

/**
 * Puts fastProduce in kafkajs's module cache in place of its v3 Produce
 * request, which v4 to v7 build on. kafkajs loads its request versions on
 * first use, so this works as long as it runs before the first send. And
 * patches kafkajs's Encoder so that a request is framed around our body
 * without copying it (kafka-frame.ts). Only for the kafkajs version it was
 * checked against; false otherwise.
 */
export function installFastProduce (): boolean {
  if (installed !== undefined) return installed
  const require = createRequire(import.meta.url)
  const version = (require('kafkajs/package.json') as { version: string }).version
  if (version !== '2.2.4') return (installed = false)
  const path = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js')
  const original = require(path) as ProduceV3
  const Encoder = require('kafkajs/src/protocol/encoder.js') as { new (): EncoderLike, prototype: { writeEncoder: WriteEncoder } }
  const entry = require.cache[path]!
  entry.exports = fastProduce(original, Encoder)
  Encoder.prototype.writeEncoder = framedWriteEncoder(Encoder.prototype.writeEncoder)
  return (installed = true)
}
