import t from 'tap'
import type { Kafka } from 'kafkajs'
import pino from 'pino'
import { KafkaBus } from '../../src/bus/kafka.js'
import { loadConfig } from '../../src/config/index.js'

/**
 * A stand-in for kafkajs with the timing of a broker that just came back:
 * an admin client connects when the test says so, and describeCluster fails
 * on one that is not connected yet.
 */
function returningBroker () {
  const connects: Array<() => void> = []
  const broker = { returning: false }
  const admin = () => {
    let connected = false
    return {
      connect: () => new Promise<void>(resolve => {
        const done = () => { connected = true; resolve() }
        if (broker.returning) connects.push(done)
        else done()
      }),
      disconnect: async () => { connected = false },
      describeCluster: async () => {
        if (!connected) throw new Error('Cluster is not connected')
        return { brokers: [], controller: 0, clusterId: 'c' }
      },
      listTopics: async () => ['asset.telemetry.v1', 'stream.events.v1', 'harness.runs.v1'],
      createTopics: async () => true
    }
  }
  const producer = () => ({ connect: async () => {}, disconnect: async () => {}, send: async () => [] })
  return { kafka: { admin, producer } as unknown as Kafka, broker, connectNext: () => connects.shift()?.() }
}

t.test('readiness probes that race after the broker returns share one check: none fails on the other\'s admin client', async t => {
  const broker = returningBroker()
  const bus = new KafkaBus(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9' }), pino({ level: 'silent' }), broker.kafka)
  t.teardown(() => bus.close())
  await bus.start()
  await bus.publish('asset.telemetry.v1', [{ key: 'k', value: 'v', headers: {} }])
  broker.broker.returning = true
  const probes = Array.from({ length: 3 }, () => bus.probe())
  await new Promise(resolve => setImmediate(resolve))
  broker.connectNext()
  const results = await Promise.allSettled(probes)
  t.same(results.map(r => r.status === 'rejected' ? String(r.reason?.message) : 'ready'), ['ready', 'ready', 'ready'], 'every probe reports the one answer: ready')
  t.equal(bus.unavailable(), undefined, 'the bus is not marked down')
})

t.test('a broker that stops answering: the probe gives up before readiness does and marks the bus down, so telemetry is refused at once', async t => {
  const frozen = { describeCluster: false }
  const admin = () => ({
    connect: async () => {},
    disconnect: async () => {},
    describeCluster: () => frozen.describeCluster ? new Promise(() => {}) : Promise.resolve({ brokers: [], controller: 0, clusterId: 'c' }),
    listTopics: async () => ['asset.telemetry.v1', 'stream.events.v1', 'harness.runs.v1'],
    createTopics: async () => true
  })
  const producer = () => ({ connect: async () => {}, disconnect: async () => {}, send: async () => [] })
  const bus = new KafkaBus(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9' }), pino({ level: 'silent' }), { admin, producer } as unknown as Kafka)
  t.teardown(() => bus.close())
  await bus.start()
  await bus.publish('asset.telemetry.v1', [{ key: 'k', value: 'v', headers: {} }])
  await bus.probe()
  t.equal(bus.unavailable(), undefined, 'up while the broker answers')

  frozen.describeCluster = true
  let bound: NodeJS.Timeout | undefined
  const outcome = await Promise.race([
    bus.probe().then(() => 'ready', (err: Error) => err.message),
    // Readiness itself gives up after 2 s; past that the probe hangs.
    new Promise<string>(resolve => { bound = setTimeout(() => resolve('still waiting after 2000 ms'), 2000) })
  ])
  clearTimeout(bound)
  t.match(outcome, /did not answer within \d+ ms/, 'the probe failed before readiness would have timed it out')
  t.match(bus.unavailable(), /did not answer within \d+ ms/, 'and the bus is known to be down')
})
