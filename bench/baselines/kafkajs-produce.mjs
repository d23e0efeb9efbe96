// The bus ceiling of the telemetry scenario's batch and stream rows: kafkajs
// alone producing what the gateway produces for a batch (each record's value
// with client_id, received_at and request_id appended, keyed by asset_id, the
// x-request-id, client-id and schema headers), `perSend` records a send, gzip,
// acks=all, `inFlight` sends at once, for `warmup` then `duration` seconds.
// No HTTP, no validation: what one core can hand the broker through kafkajs.
//
// Config (one JSON argument): brokers, topic, bodyFile, perSend, inFlight,
// warmup, duration. Prints one JSON line: records and sends acknowledged in
// the measured window, their rates, send latency percentiles (ms), and the
// process's CPU over the window as a share of one core.
import { readFileSync } from 'node:fs'
import { Kafka, CompressionTypes, Partitioners, logLevel } from 'kafkajs'

const c = JSON.parse(process.argv[2])
const raw = readFileSync(c.bodyFile, 'utf8').trim()
const record = JSON.parse(raw)
const head = JSON.stringify({ ...record, asset_id: undefined }).slice(0, -1)

const kafka = new Kafka({ clientId: 'bench-kafkajs-produce', brokers: c.brokers.split(','), logLevel: logLevel.WARN })
const admin = kafka.admin()
await admin.connect()
if (!(await admin.listTopics()).includes(c.topic)) await admin.createTopics({ waitForLeaders: true, topics: [{ topic: c.topic, numPartitions: 6 }] })
await admin.disconnect()
const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
await producer.connect()

let n = 0
/** A send's messages, built per send as the gateway builds them per batch. */
function messages () {
  const at = new Date().toISOString()
  const id = `bench-${n++}`
  return Array.from({ length: c.perSend }, (_, i) => {
    const asset = `truck-${i}`
    const requestId = `${id}#${i}`
    return {
      key: asset,
      value: `${head},"asset_id":"${asset}","client_id":"bench","received_at":"${at}","request_id":"${requestId}"}`,
      headers: { 'x-request-id': requestId, 'client-id': 'bench', schema: 'asset-tracking-data@1' }
    }
  })
}

let measuring = false
let stop = false
let records = 0
const latencies = []
const loop = async () => {
  while (!stop) {
    const t = performance.now()
    await producer.send({ topic: c.topic, acks: -1, compression: CompressionTypes.GZIP, messages: messages() })
    if (!measuring) continue
    records += c.perSend
    latencies.push(performance.now() - t)
  }
}
const loops = Promise.all(Array.from({ length: c.inFlight }, loop))
await new Promise(resolve => setTimeout(resolve, c.warmup * 1000))
measuring = true
const cpu0 = process.cpuUsage()
const t0 = performance.now()
await new Promise(resolve => setTimeout(resolve, c.duration * 1000))
measuring = false
const seconds = (performance.now() - t0) / 1000
const used = process.cpuUsage(cpu0)
stop = true
await loops
await producer.disconnect()
latencies.sort((a, b) => a - b)
const pct = p => latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p / 100 * latencies.length))] : undefined
process.stdout.write(JSON.stringify({
  seconds,
  records,
  sends: latencies.length,
  recordsPerSec: records / seconds,
  sendsPerSec: latencies.length / seconds,
  latencyMs: { p50: pct(50), p75: pct(75), p90: pct(90), p99: pct(99), max: latencies.at(-1) },
  cpu: (used.user + used.system) / 1e6 / seconds
}) + '\n')
