import { createRequire } from 'node:module'
import { gzip } from 'node:zlib'
import { crc32c } from './crc32c.js'
import { FRAME_HEADROOM, framed, framedWriteEncoder, type EncoderLike, type WriteEncoder } from './kafka-frame.js'
import { measureRecords, Writer, type Message } from './kafka-records.js'
import { spliceText, type Splice } from './types.js'

/**
 * A faster encoding of kafkajs's Produce request (API versions 3 to 7, which
 * all use one body), written into kafkajs in place of its own.
 *
 * kafkajs builds every record, header and batch in an encoder of its own
 * (each a zero-filled buffer, grown by doubling), copies each into its
 * parent, four levels deep, and computes the batch's CRC32C a byte at a
 * time: about 30 µs of CPU per 2 KiB record, as much as all the rest of a
 * telemetry request (`node bench/kafka-encode.mjs` times both encoders). This one measures the request first, then
 * writes it into one buffer and runs a CRC32C sixteen bytes at a time.
 * The bytes are the same as kafkajs's (test/bus/kafka-produce.test.ts
 * compares them); kafkajs still does everything else (connections,
 * metadata, partitioning, the idempotent producer's sequence numbers,
 * retries, responses). Batches compressed with gzip are written here too,
 * their records compressed off the main thread (zlib's own thread pool);
 * requests it does not cover (other codecs, message timestamps, header
 * values given as lists) go to kafkajs's own encoder.
 */

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
const CODEC_MASK = 0x07
/** The batch header from partitionLeaderEpoch to the record count, and the 12 bytes before it. */
const BATCH_HEADER = 4 + 1 + 4 + 2 + 4 + 8 + 8 + 8 + 2 + 4 + 4
const BATCH_PREFIX = 8 + 4

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
 * or Buffers, no timestamps, no compression but gzip. Anything else is
 * kafkajs's to encode (or to refuse, as it does a null header value).
 */
function covered (args: ProduceArgs): boolean {
  const codec = args.compression ?? 0
  if (codec !== 0 && codec !== GZIP) return false
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

/** Kafka's codec number for gzip (the batch attributes' lowest three bits). */
export const GZIP = 1
/**
 * zlib's fastest level: on batches of telemetry records it compressed about
 * as well as the default (6) for a third to a half of the CPU
 * (bench/kafka-encode.mjs prints both).
 */
export const GZIP_LEVEL = 1

/** Records compressed for a batch: gzip at GZIP_LEVEL, on zlib's thread pool. */
export type Compress = (records: Buffer) => Promise<Buffer>
export const gzipRecords: Compress = records => new Promise((resolve, reject) => {
  gzip(records, { level: GZIP_LEVEL }, (err, out) => { if (err) reject(err); else resolve(out) })
})

/**
 * The request body kafkajs's v3 `encode()` would produce, in one buffer,
 * after `headroom` bytes left free for the request's frame (kafka-frame.ts).
 */
export function encodeProduceBody (args: ProduceArgs, now = Date.now(), headroom = 0): Buffer {
  const lengths: number[][] = []
  const recordBytes: number[][] = []
  for (const t of args.topicData) {
    const tl: number[] = []
    lengths.push(tl)
    recordBytes.push(t.partitions.map(p => measureRecords(p.messages, tl)))
  }
  return writeRequest(args, now, headroom, recordBytes, (w, ti, pi, at) => { w.records(args.topicData[ti]!.partitions[pi]!.messages, lengths[ti]!, at) })
}

/**
 * The same body with each partition's records compressed by `compress`
 * (the batch says which codec, `args.compression`): as kafkajs writes it,
 * the record count, then the compressed records.
 */
export async function encodeCompressedProduceBody (args: ProduceArgs, compress: Compress, now = Date.now(), headroom = 0): Promise<Buffer> {
  const pending: Array<Array<Promise<Buffer>>> = []
  for (const t of args.topicData) {
    pending.push(t.partitions.map(p => {
      const lengths: number[] = []
      const w = new Writer(Buffer.allocUnsafe(measureRecords(p.messages, lengths)))
      w.records(p.messages, lengths, 0)
      return compress(w.buf)
    }))
  }
  const compressed = await Promise.all(pending.map(list => Promise.all(list)))
  return writeRequest(args, now, headroom, compressed.map(list => list.map(b => b.length)), (w, ti, pi) => {
    const bytes = compressed[ti]![pi]!
    w.offset += bytes.copy(w.buf, w.offset)
  })
}

/** Writes one partition's records (`at`: where its lengths start among its topic's). */
type WriteRecords = (w: Writer, topic: number, partition: number, at: number) => void

/** The request around records of `recordBytes` bytes per partition, which `write` writes. */
function writeRequest (args: ProduceArgs, now: number, headroom: number, recordBytes: number[][], write: WriteRecords): Buffer {
  const transactionalId = args.transactionalId ?? null
  const producerEpoch = args.producerEpoch ?? 0
  let size = 2 + (transactionalId === null ? 0 : Buffer.byteLength(transactionalId, 'utf8')) + 2 + 4 + 4
  for (let ti = 0; ti < args.topicData.length; ti++) {
    const t = args.topicData[ti]!
    size += 2 + Buffer.byteLength(t.topic, 'utf8') + 4
    for (const records of recordBytes[ti]!) size += 4 + 4 + BATCH_PREFIX + BATCH_HEADER + records
  }
  const w = new Writer(Buffer.allocUnsafe(headroom + size))
  w.offset = headroom
  if (transactionalId === null) w.int16(-1)
  else w.string16(transactionalId)
  w.int16(args.acks)
  w.int32(args.timeout)
  w.int32(args.topicData.length)
  const [high, low] = int64Parts(args.producerId)
  const [nowHigh, nowLow] = int64Parts(now)
  const attributes = (args.transactionalId ? TRANSACTIONAL_MASK : 0) | ((args.compression ?? 0) & CODEC_MASK)
  for (let ti = 0; ti < args.topicData.length; ti++) {
    const t = args.topicData[ti]!
    w.string16(t.topic)
    w.int32(t.partitions.length)
    let at = 0
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
      write(w, ti, pi, at)
      at += p.messages.length
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
        const body = (args.compression ?? 0) === GZIP
          ? await encodeCompressedProduceBody(args, gzipRecords, Date.now(), FRAME_HEADROOM)
          : encodeProduceBody(args, Date.now(), FRAME_HEADROOM)
        return framed(new Encoder(), body, FRAME_HEADROOM)
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
