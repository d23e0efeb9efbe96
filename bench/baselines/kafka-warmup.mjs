// Warms up a freshly started broker before the `telemetry` scenario measures
// anything against it: a cold Kafka JVM handles a fraction of its warm rate
// (JIT) for its first ~20 s of load, and whichever target ran first would pay
// for it. Sends for WARMUP_SECONDS both ways the targets do: many concurrent
// one-record sends (like fastify-kafkajs) and batches one at a time (like the
// gateway), acks=all, to its own topic (TOPIC, default bench.warmup, created
// with TOPIC_PARTITIONS partitions).
//
// Environment: KAFKA_BROKERS, WARMUP_SECONDS (30), BODY_FILE (the record sent),
// TOPIC, TOPIC_PARTITIONS (6).
// Prints one JSON line per second ({"s":n,"sends":n,"records":n}) and a final
// {"msg":"kafka warm-up done",...} line on stdout; exits 0.
import { readFileSync } from 'node:fs'
import { Kafka, Partitioners, logLevel } from 'kafkajs'

const env = process.env
const brokers = (env.KAFKA_BROKERS ?? '').split(',').map(s => s.trim()).filter(Boolean)
if (brokers.length === 0) throw new Error('KAFKA_BROKERS is required')
const seconds = Number(env.WARMUP_SECONDS ?? 30)
const topic = env.TOPIC ?? 'bench.warmup'
const value = env.BODY_FILE ? readFileSync(env.BODY_FILE, 'utf8') : '{"asset_id":"warmup"}'
const CONCURRENT_SINGLE = 50
const BATCH = 50

const kafka = new Kafka({ clientId: 'bench-kafka-warmup', brokers, logLevel: logLevel.WARN })
const admin = kafka.admin()
await admin.connect()
if (!(await admin.listTopics()).includes(topic)) {
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: Number(env.TOPIC_PARTITIONS ?? 6) }] })
}
await admin.disconnect()
const producer = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner })
await producer.connect()

let sends = 0
let records = 0
let stop = false
const t0 = Date.now()
let last = { sends: 0, records: 0 }
const ticker = setInterval(() => {
  process.stdout.write(JSON.stringify({ s: Math.round((Date.now() - t0) / 1000), sends: sends - last.sends, records: records - last.records }) + '\n')
  last = { sends, records }
}, 1000)
setTimeout(() => { stop = true }, seconds * 1000)

const one = [{ key: 'truck-0042', value }]
const batch = Array.from({ length: BATCH }, () => ({ key: 'truck-0042', value }))
const loop = async messages => {
  while (!stop) {
    await producer.send({ topic, acks: -1, messages })
    sends++
    records += messages.length
  }
}
await Promise.all([...Array.from({ length: CONCURRENT_SINGLE }, () => loop(one)), loop(batch)])
clearInterval(ticker)
await producer.disconnect()
process.stdout.write(JSON.stringify({ msg: 'kafka warm-up done', seconds: (Date.now() - t0) / 1000, sends, records }) + '\n')
