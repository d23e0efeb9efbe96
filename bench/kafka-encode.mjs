// CPU per record of encoding a Produce request: kafkajs's own encoder beside
// the gateway's (src/bus/kafka-produce.ts), on the bus messages the telemetry
// route publishes (the spec's example record, its headers), in batches of
// KAFKA_ENCODE_BATCH (default 50); `spliced` is the gateway's encoder on the
// messages the hot path publishes (the received bytes and a tail, a Splice); `gzip` is `spliced` with
// the batch gzipped as KAFKA_COMPRESSION=gzip sends it (zlib's thread pool included: the CPU is the
// process's), beside `gzip-6`, the same at zlib's default level (kafkajs's own codec's); alternated
// for KAFKA_ENCODE_ROUNDS rounds of KAFKA_ENCODE_SECONDS each. CPU time (process.cpuUsage), not wall
// time: it moves little when others share the machine. Also the bytes on the wire per record.
// The records differ as a fleet's do (asset, time, position, request id), or compression would
// flatter itself on copies. Needs `npm run build`.
//
//   node bench/kafka-encode.mjs
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_DIR } from './lib/paths.mjs'
import { median } from './lib/stats.mjs'

const num = (name, def) => (process.env[name] ? Number(process.env[name]) : def)
const BATCH = num('KAFKA_ENCODE_BATCH', 50)
const ROUNDS = num('KAFKA_ENCODE_ROUNDS', 5)
const SECONDS = num('KAFKA_ENCODE_SECONDS', 2)

const require = createRequire(join(REPO_DIR, 'package.json'))
const kafkajsProduce = require('kafkajs/src/protocol/requests/produce/v3/request.js')
const Encoder = require('kafkajs/src/protocol/encoder.js')
const { fastProduce, encodeCompressedProduceBody, GZIP } = await import(join(REPO_DIR, 'dist', 'bus', 'kafka-produce.js'))
const { promisify } = await import('node:util')
const { gzip } = await import('node:zlib')
const { spliceMessage, toMessage } = await import(join(REPO_DIR, 'dist', 'telemetry', 'record.js'))

const fixture = JSON.parse(readFileSync(join(REPO_DIR, 'test', 'fixtures', 'asset-track.json'), 'utf8'))
/** Record i: the fixture with its own asset, time and position. */
const varied = i => ({ ...fixture, asset_id: `truck-${1000 + (i * 7919) % 5000}`, timestamp: new Date(Date.UTC(2026, 10, 22, 8, 0, i % 60, (i * 37) % 1000)).toISOString(), gps: { ...fixture.gps, latitude: 52 + ((i * 7) % 1000) / 1e4, longitude: 13 + ((i * 13) % 1000) / 1e4 } })
const texts = Array.from({ length: BATCH }, (_, i) => JSON.stringify(varied(i), null, 2))
const raws = texts.map(t => Buffer.from(t))
const receipt = i => ({ clientId: 'bench', requestId: `req-${i}`, receivedAt: new Date().toISOString(), tenantKey: 'bench' })
const batch = messages => ({ acks: -1, timeout: 30000, producerId: 1234, producerEpoch: 0, topicData: [{ topic: 'asset.telemetry.v1', partitions: [{ partition: 3, firstSequence: 1000, messages }] }] })
const args = batch(texts.map((text, i) => toMessage(JSON.parse(text), text, receipt(i))))
const splicedArgs = batch(raws.map((raw, i) => spliceMessage(JSON.parse(texts[i]).asset_id, raw, receipt(i))))
const gzippedArgs = { ...splicedArgs, compression: GZIP }
const gateway = fastProduce(kafkajsProduce, Encoder)
const defaultLevel = promisify(gzip)
const gzip6 = a => ({ encode: async () => ({ buffer: await encodeCompressedProduceBody(a, defaultLevel) }) })
const variants = { kafkajs: [kafkajsProduce, args], gateway: [gateway, args], spliced: [gateway, splicedArgs], gzip: [gateway, gzippedArgs], 'gzip-6': [gzip6, gzippedArgs] }

const usPerRecord = {}
for (const name of Object.keys(variants)) usPerRecord[name] = []
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, [build, args]] of Object.entries(variants)) {
    const c0 = process.cpuUsage()
    const end = performance.now() + SECONDS * 1000
    let records = 0
    while (performance.now() < end) {
      for (let i = 0; i < 20; i++) await build(args).encode()
      records += 20 * BATCH
    }
    const c = process.cpuUsage(c0)
    usPerRecord[name].push((c.user + c.system) / records)
  }
}
const bytes = {}
for (const [name, [build, a]] of Object.entries(variants)) bytes[name] = (await build(a).encode()).buffer.length
console.log(`Produce request encoding, ${BATCH} telemetry records per batch, ${ROUNDS} rounds × ${SECONDS} s, CPU µs and bytes on the wire per record:`)
for (const [name, list] of Object.entries(usPerRecord)) console.log(`  ${name.padEnd(8)} ${median(list).toFixed(2).padStart(7)} µs ${String(Math.round(bytes[name] / BATCH)).padStart(6)} B (rounds: ${list.map(v => v.toFixed(2)).join(' ')})`)
console.log(`  ratio    ${(median(usPerRecord.kafkajs) / median(usPerRecord.gateway)).toFixed(1)}×`)
