import t from 'tap'
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import pino from 'pino'
import { KafkaBus } from '../../src/bus/kafka.js'
import { crc32c } from '../../src/bus/crc32c.js'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import { encodeCompressedProduceBody, encodeProduceBody, fastProduce, GZIP, installFastProduce } from '../../src/bus/kafka-produce.js'
import { loadConfig } from '../../src/config/index.js'
import { consume } from '../helpers/kafka.js'
import { sharedInfra } from '../helpers/infra.js'

const require = createRequire(import.meta.url)
const REQUEST = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js')
// Taken before anything installs the fast encoder, so this is kafkajs's own.
const kafkajsProduce = require(REQUEST) as (args: any) => { apiKey: number, apiVersion: number, encode: () => Promise<{ buffer: Buffer }> }
const Encoder = require('kafkajs/src/protocol/encoder.js')
const Long = require('kafkajs/src/utils/long.js')
const kafkajsCrc = require('kafkajs/src/protocol/recordBatch/crc32C/index.js') as (b: Buffer) => number

const NOW = 1_763_799_330_123
/** kafkajs's gzip codec: zlib's default level. */
const kafkajsGzip = (records: Buffer): Promise<Buffer> => promisify(gzip)(records)

/** Where the record batch starts in the body of a request for one partition of `topic`, without a transactional id. */
const batchStart = (topic: string): number => 2 + 2 + 4 + 4 + 2 + Buffer.byteLength(topic) + 4 + 4 + 4

/** kafkajs's bytes for `args`, with its clock held at NOW. */
async function kafkajsBytes (args: unknown): Promise<Buffer> {
  const real = Date.now
  Date.now = () => NOW
  try {
    return (await kafkajsProduce(args).encode()).buffer
  } finally {
    Date.now = real
  }
}

const record = (i: number) => ({
  key: `truck-${i}`,
  value: JSON.stringify({ asset_id: `truck-${i}`, note: 'é✓😀'.repeat(i), pad: 'x'.repeat(i * 97) }),
  headers: { 'x-request-id': `req-${i}`, 'client-id': 'fleet-1', schema: 'asset-tracking-data@1', 'message-id': `fleet-1/req-${i}` }
})

const onePartition = (messages: object[]): object => ({ acks: -1, timeout: 30000, topicData: [{ topic: 'x', partitions: [{ partition: 0, messages }] }] })

const cases: Array<[string, unknown]> = [
  ['one record, no producer id', { acks: -1, timeout: 30000, topicData: [{ topic: 'asset.telemetry.v1', partitions: [{ partition: 0, messages: [record(1)] }] }] }],
  ['idempotent: producer id as a Long, epoch, first sequence', {
    acks: -1,
    timeout: 30000,
    producerId: Long.fromNumber(4_000_000_123),
    producerEpoch: 3,
    topicData: [{ topic: 'asset.telemetry.v1', partitions: [{ partition: 5, firstSequence: 2_147_483_000, messages: Array.from({ length: 300 }, (_, i) => record(i)) }] }]
  }],
  ['producer id as a number and as a string', { acks: 1, timeout: 5, producerId: 77, topicData: [{ topic: 't', partitions: [{ partition: 1, messages: [record(2)] }] }] }],
  ['string producer id above 2^53', { acks: 1, timeout: 5, producerId: '9007199254740993', topicData: [{ topic: 't', partitions: [{ partition: 1, messages: [record(2)] }] }] }],
  ['transactional, several topics and partitions', {
    acks: -1,
    timeout: 1000,
    transactionalId: 'tx-é',
    producerId: 5,
    topicData: [
      { topic: 'a', partitions: [{ partition: 0, messages: [record(3), record(4)] }, { partition: 2, messages: [record(5)] }] },
      { topic: 'b.ü', partitions: [{ partition: 1, messages: [record(6)] }] }
    ]
  }],
  ['short strings ASCII or not, at and past the length copied in JavaScript', onePartition([
    { key: 'ké', value: 'ü', headers: { 'é': '✓', [`h${'a'.repeat(63)}`]: 'b'.repeat(64), ['c'.repeat(65)]: 'd'.repeat(65), emoji: '😀', ctl: '\u0000\u007f' } },
    { key: 'k'.repeat(64), value: '\u0080', headers: { lone: '\ud800' } }
  ])],
  ['null and missing keys, Buffer values, empty value, no headers, Buffer header values', onePartition([
    { key: null, value: 'v' },
    { value: Buffer.from([0, 1, 2, 255]) },
    { key: Buffer.from('k'), value: '', headers: {} },
    { key: 'k', value: null, headers: { bin: Buffer.from([9, 9]), empty: '' } }
  ])]
]

t.test('the request body is byte for byte the one kafkajs encodes', async t => {
  for (const [name, args] of cases) {
    const ours = encodeProduceBody(args as Parameters<typeof encodeProduceBody>[0], NOW)
    t.ok(ours.equals(await kafkajsBytes(args)), name)
  }
})

/** `args` with each message's value a Splice of its bytes, cut short and with a tail, and the same with the value joined. */
function spliced (args: any): { spliced: any, joined: any } {
  const map = (fn: (m: any, i: number) => any) => ({ ...args, topicData: args.topicData.map((t: any) => ({ ...t, partitions: t.partitions.map((p: any) => ({ ...p, messages: p.messages.map(fn) })) })) })
  const parts = (i: number): [Buffer, string] => [Buffer.from(`{"n":${i},"s":"é✓😀"}  trailing bytes past the end`), `,"added":"${'ü'.repeat(i % 5)}"}`]
  return {
    spliced: map((m, i) => { const [bytes, tail] = parts(i); return { ...m, value: { bytes, end: bytes.indexOf('}'), tail } } }),
    joined: map((m, i) => { const [bytes, tail] = parts(i); return { ...m, value: bytes.toString('utf8', 0, bytes.indexOf('}')) + tail } })
  }
}

t.test('a Splice value is written as its bytes up to its end, then its tail: what kafkajs writes for the joined value', async t => {
  for (const [name, args] of cases.slice(0, 2)) {
    const { spliced: withSplices, joined } = spliced(args)
    t.ok(encodeProduceBody(withSplices, NOW).equals(await kafkajsBytes(joined)), name)
    t.ok((await encodeCompressedProduceBody({ ...withSplices, compression: GZIP }, kafkajsGzip, NOW)).equals(await kafkajsBytes({ ...joined, compression: GZIP })), `${name}: compressed`)
    const uncovered = { ...withSplices, topicData: withSplices.topicData.map((t: any) => ({ ...t, partitions: t.partitions.map((p: any) => ({ ...p, messages: p.messages.map((m: any) => ({ ...m, timestamp: NOW - 1 })) })) })) }
    const request = fastProduce(kafkajsProduce as any, Encoder)(uncovered)
    const real = Date.now
    Date.now = () => NOW
    try {
      const theirs = { ...joined, topicData: joined.topicData.map((t: any) => ({ ...t, partitions: t.partitions.map((p: any) => ({ ...p, messages: p.messages.map((m: any) => ({ ...m, timestamp: NOW - 1 })) })) })) }
      t.ok((await request.encode() as unknown as { buffer: Buffer }).buffer.equals(await kafkajsBytes(theirs)), `${name}: with timestamps, kafkajs gets it joined`)
    } finally {
      Date.now = real
    }
  }
})

t.test('gzip: with kafkajs\'s own level the body is byte for byte kafkajs\'s; at ours, the records inflate to the same', async t => {
  for (const [name, args] of cases) {
    const gzipped = { ...(args as object), compression: GZIP } as Parameters<typeof encodeProduceBody>[0]
    t.ok((await encodeCompressedProduceBody(gzipped, kafkajsGzip, NOW)).equals(await kafkajsBytes(gzipped)), name)
  }
  const [, args] = cases[1]!
  const gzipped = { ...(args as object), compression: GZIP } as Parameters<typeof encodeProduceBody>[0]
  const real = Date.now
  Date.now = () => NOW
  try {
    const ours = (await fastProduce(kafkajsProduce as any, Encoder)(gzipped).encode() as unknown as { buffer: Buffer }).buffer
    // kafkajs's decoder reads our batch back: CRC, attributes, the gzip inside.
    const decode = require('kafkajs/src/protocol/recordBatch/v0/decoder.js') as (d: unknown) => Promise<{ records: Array<{ key: Buffer, value: Buffer }>, compression?: number, attributes?: number }>
    const Decoder = require('kafkajs/src/protocol/decoder.js')
    const batch = await decode(new Decoder(ours.subarray(batchStart((args as any).topicData[0].topic))))
    const sent = (args as any).topicData[0].partitions[0].messages
    t.equal(batch.records.length, sent.length, 'every record')
    t.same(batch.records.map(r => [r.key.toString(), r.value.toString()]), sent.map((m: any) => [m.key, m.value]), 'keys and values as given')
    t.ok(ours.length < (await kafkajsBytes(args)).length / 4, `compressed: ${ours.length} B against ${(await kafkajsBytes(args)).length} B`)
  } finally {
    Date.now = real
  }
})

t.test('through fastProduce, kafkajs\'s request keeps its fields and gets the same bytes', async t => {
  const build = fastProduce(kafkajsProduce as any, Encoder)
  const [, args] = cases[1]!
  const real = Date.now
  Date.now = () => NOW
  try {
    const request = build(args as any)
    t.equal(request['apiKey'], kafkajsProduce(args).apiKey)
    t.equal(request['apiVersion'], 3)
    const encoder = await request.encode() as unknown as { buffer: Buffer, size: () => number }
    t.ok(encoder.buffer.equals(await kafkajsBytes(args)), 'the encoder kafkajs reads holds our bytes')
    t.equal(encoder.size(), encoder.buffer.length, 'and its size')
  } finally {
    Date.now = real
  }
})

t.test('what it does not cover is left to kafkajs: timestamps, list header values', async t => {
  const build = fastProduce(kafkajsProduce as any, Encoder)
  const one = (m: object, extra: object = {}) => ({ acks: -1, timeout: 1, ...extra, topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [m] }] }] })
  const uncovered = [
    one({ key: 'k', value: 'v', timestamp: NOW - 5 }),
    one({ key: 'k', value: 'v', headers: { a: ['1', '2'] } }),
    one({ key: 'k', value: 'v', timestamp: NOW - 5 }, { compression: GZIP })
  ]
  for (const args of uncovered) {
    const request = build(args as any)
    const real = Date.now
    Date.now = () => NOW
    try {
      t.ok((await request.encode() as unknown as { buffer: Buffer }).buffer.equals(await kafkajsBytes(args)), JSON.stringify(args).slice(0, 80))
    } finally {
      Date.now = real
    }
  }
})

t.test('the request kafkajs frames around our body is its own, with the body not copied', async t => {
  installFastProduce()
  const createRequest = require('kafkajs/src/protocol/request.js') as (o: object) => Promise<{ buffer: Buffer }>
  const build = fastProduce(kafkajsProduce as any, Encoder)
  const [, args] = cases[1]!
  const real = Date.now
  Date.now = () => NOW
  try {
    for (const clientId of ['evidence-gateway', 'c'.repeat(242), 'c'.repeat(243)]) {
      const request = build(args as any)
      const body = await request.encode() as unknown as { buf: Buffer }
      const ours = await createRequest({ correlationId: 7, clientId, request: { ...request, encode: async () => body } })
      const theirs = await createRequest({ correlationId: 7, clientId, request: kafkajsProduce(args) })
      t.ok(ours.buffer.equals(theirs.buffer), `the same bytes, client id of ${clientId.length}`)
      t.equal(ours.buffer.buffer === body.buf.buffer, clientId.length <= 242, clientId.length <= 242 ? 'written around the body in place' : 'a client id past the room is framed by copying, as kafkajs does')
    }
  } finally {
    Date.now = real
  }
})

t.test('an encoder framed twice keeps the bytes of the first frame', async t => {
  installFastProduce()
  const [, args] = cases[0]!
  const body = await fastProduce(kafkajsProduce as any, Encoder)(args as any).encode() as unknown as { buffer: Buffer }
  const bytes = Buffer.from(body.buffer)
  const first = new Encoder().writeInt32(1).writeEncoder(body)
  const second = new Encoder().writeInt32(2).writeEncoder(body)
  t.ok(first.buffer.equals(Buffer.concat([Buffer.from([0, 0, 0, 1]), bytes])), 'the first')
  t.ok(second.buffer.equals(Buffer.concat([Buffer.from([0, 0, 0, 2]), bytes])), 'the second, copied')
})

t.test('the CRC-32C equals kafkajs\'s at every length and offset', async t => {
  const buf = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 131 + 7) & 0xff))
  for (const [start, end] of [[0, 0], [0, 1], [0, 7], [0, 8], [0, 15], [0, 16], [0, 17], [3, 20], [5, 37], [1, 999], [0, 1000]] as const) {
    t.equal(crc32c(buf, start, end), kafkajsCrc(buf.subarray(start, end)), `[${start}, ${end})`)
  }
})

t.test('installed into kafkajs for the version it was checked against', async t => {
  t.equal(installFastProduce(), require('kafkajs/package.json').version === '2.2.4')
  t.not(require(REQUEST), kafkajsProduce, 'kafkajs\'s module cache holds the fast request')
})

t.test('a real broker takes what it encodes, gzipped as configured by default (CRC, idempotent sequence), and a consumer reads the same records', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const topic = `kafka-produce-${randomUUID()}`
  const bus = new KafkaBus(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_TELEMETRY: topic, KAFKA_TOPIC_PARTITIONS: '1' }), pino({ level: 'silent' }))
  t.teardown(() => bus.close())
  await bus.start()
  const sent = Array.from({ length: 40 }, (_, i) => record(i))
  // Several batches, so the broker checks the producer's sequence numbers across them.
  for (let i = 0; i < sent.length; i += 10) await bus.publish(topic, sent.slice(i, i + 10))
  // And values given as a Splice: the bytes up to its end, then its tail.
  const bytes = Buffer.from('{"asset_id":"é✓"} not sent')
  await bus.publish(topic, [{ key: 'spliced', value: { bytes, end: bytes.indexOf('}'), tail: ',"b":1}' }, headers: {} }])
  const got = await consume(infra.KAFKA_BROKERS, topic, sent.length + 1)
  t.equal(got.length, sent.length + 1, 'every record arrived')
  t.same(got.slice(0, sent.length).map(m => ({ key: m.key, value: m.value, headers: m.headers })), sent, 'keys, values and headers as sent')
  t.equal(got[sent.length]!.value, '{"asset_id":"é✓","b":1}', 'a Splice as its joined text')
})
