import t from 'tap'
import kafkajs, { type Kafka } from 'kafkajs'
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
      fetchTopicMetadata: async () => {
        if (!connected) throw new Error('Cluster is not connected')
        return { topics: [] }
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
    fetchTopicMetadata: () => frozen.describeCluster ? new Promise(() => {}) : Promise.resolve({ topics: [] }),
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

/** A stand-in whose producers record what they send; a send to `stalled` waits until released, or fails when told. */
function topicBroker (stalled: string) {
  const producers: Array<{ sent: string[] }> = []
  const held: Array<{ resolve: () => void, reject: (err: Error) => void }> = []
  const admin = () => ({
    connect: async () => {},
    disconnect: async () => {},
    describeCluster: async () => ({ brokers: [], controller: 0, clusterId: 'c' }),
    fetchTopicMetadata: async () => ({ topics: [] }),
    listTopics: async () => ['asset.telemetry.v1', 'stream.events.v1', 'harness.runs.v1', 'harness.control.v1'],
    createTopics: async () => true
  })
  const producer = () => {
    const record = { sent: [] as string[] }
    producers.push(record)
    return {
      connect: async () => {},
      disconnect: async () => {},
      send: ({ topic }: { topic: string }) => {
        record.sent.push(topic)
        return topic === stalled ? new Promise<void>((resolve, reject) => { held.push({ resolve, reject }) }) : Promise.resolve([])
      }
    }
  }
  return { kafka: { admin, producer } as unknown as Kafka, producers, held }
}

t.test('a send that waits on one topic (a partition without a leader) holds no other topic back: a producer per topic', async t => {
  const broker = topicBroker('harness.runs.v1')
  const bus = new KafkaBus(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9' }), pino({ level: 'silent' }), broker.kafka)
  t.teardown(() => bus.close())
  await bus.start()
  const runs = bus.publish('harness.runs.v1', [{ key: 'run-1', value: '{}', headers: {} }])
  const laterRuns = bus.publish('harness.runs.v1', [{ key: 'run-2', value: '{}', headers: {} }])
  await bus.publish('asset.telemetry.v1', [{ key: 'truck-1', value: '{}', headers: {} }])
  await bus.publish('stream.events.v1', [{ key: 'cam-1', value: '{}', headers: {} }])
  t.pass('telemetry and evidence were acknowledged while the runs send was out')
  t.equal(broker.producers.length, 3, 'one producer per topic published to')
  t.same(broker.producers.map(p => p.sent), [['harness.runs.v1'], ['asset.telemetry.v1'], ['stream.events.v1']], 'each sends its own topic only')
  t.equal(broker.held.length, 1, 'the second runs send waits for the first: one send in flight per producer (kafkajs #1005)')
  broker.held.shift()!.resolve()
  await runs
  await new Promise(resolve => setImmediate(resolve))
  t.equal(broker.held.length, 1, 'then the second goes out')
  broker.held.shift()!.resolve()
  await laterRuns
})

t.test('a failed send marks its own topic down, not the others: telemetry is not refused for a runs outage', async t => {
  const broker = topicBroker('harness.runs.v1')
  const bus = new KafkaBus(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9' }), pino({ level: 'silent' }), broker.kafka)
  t.teardown(() => bus.close())
  await bus.start()
  const runs = bus.publish('harness.runs.v1', [{ key: 'run-1', value: '{}', headers: {} }])
  await new Promise(resolve => setImmediate(resolve))
  broker.held.shift()!.reject(new Error('There is no leader for this topic-partition'))
  await t.rejects(runs, /no leader/)
  t.match(bus.unavailable('harness.runs.v1'), /no leader/, 'the runs topic is known to be down')
  t.equal(bus.unavailable('asset.telemetry.v1'), undefined, 'telemetry is not')
  t.match(bus.unavailable(), /no leader/, 'asked about no topic in particular: something is down')
  await bus.publish('asset.telemetry.v1', [{ key: 'truck-1', value: '{}', headers: {} }])
  t.pass('and telemetry is published meanwhile')
})

t.test('a partition of another topic without a leader is not the cluster down: the probe passes and telemetry is not refused', async t => {
  // What kafkajs throws when a metadata answer names a partition without a leader; describeCluster asks for every topic.
  const leaderless = new kafkajs.KafkaJSNumberOfRetriesExceeded(Object.assign(new Error('There is no leader for this topic-partition as we are in the middle of a leadership election'), { type: 'LEADER_NOT_AVAILABLE', code: 5, retriable: true }), { retryCount: 5, retryTime: 7500 })
  const cluster = { leaderless: new Set<string>(), unreachable: false }
  const metadata = async (topics: string[]): Promise<void> => {
    if (cluster.unreachable) throw new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9')
    if (topics.some(topic => cluster.leaderless.has(topic))) throw leaderless
  }
  const all = ['asset.telemetry.v1', 'stream.events.v1', 'harness.runs.v1']
  const admin = () => ({
    connect: async () => {},
    disconnect: async () => {},
    describeCluster: async () => { await metadata(all); return { brokers: [], controller: 0, clusterId: 'c' } },
    fetchTopicMetadata: async ({ topics }: { topics: string[] }) => { await metadata(topics); return { topics: [] } },
    listTopics: async () => { await metadata(all); return all },
    createTopics: async () => true
  })
  const producer = () => ({ connect: async () => {}, disconnect: async () => {}, send: async () => [] })
  const bus = new KafkaBus(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9' }), pino({ level: 'silent' }), { admin, producer } as unknown as Kafka)
  t.teardown(() => bus.close())
  await bus.start()
  await bus.publish('asset.telemetry.v1', [{ key: 'k', value: 'v', headers: {} }])
  cluster.leaderless.add('harness.runs.v1')
  await t.resolves(bus.probe(), 'a runs partition without a leader: the probe passes')
  t.equal(bus.unavailable('asset.telemetry.v1'), undefined, 'telemetry is not refused')
  cluster.leaderless.add('asset.telemetry.v1')
  await t.rejects(bus.probe(), /no leader/, 'a telemetry partition without a leader fails it')
  cluster.leaderless.clear()
  cluster.unreachable = true
  await t.rejects(bus.probe(), /ECONNREFUSED/, 'as does a broker that does not answer')
  t.match(bus.unavailable('asset.telemetry.v1'), /ECONNREFUSED/)
})

t.test('a broker that dies after the probe\'s client met it: the probe asks again through a fresh client and passes', async t => {
  // kafkajs asks a random broker of a client's pool: a kept client may pick the dead one, a fresh one knows only the live.
  let died = false
  const admin = () => {
    const metDeadBroker = !died
    return {
      connect: async () => {},
      disconnect: async () => {},
      describeCluster: async () => ({ brokers: [], controller: 0, clusterId: 'c' }),
      fetchTopicMetadata: async () => {
        if (died && metDeadBroker) throw new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9')
        return { topics: [] }
      },
      listTopics: async () => ['asset.telemetry.v1', 'stream.events.v1', 'harness.runs.v1'],
      createTopics: async () => true
    }
  }
  const producer = () => ({ connect: async () => {}, disconnect: async () => {}, send: async () => [] })
  const bus = new KafkaBus(loadConfig({ BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9' }), pino({ level: 'silent' }), { admin, producer } as unknown as Kafka)
  t.teardown(() => bus.close())
  await bus.start()
  await bus.publish('asset.telemetry.v1', [{ key: 'k', value: 'v', headers: {} }])
  await bus.probe()
  died = true
  await t.resolves(bus.probe(), 'the probe passes')
  t.equal(bus.unavailable('asset.telemetry.v1'), undefined, 'telemetry is not refused')
})
