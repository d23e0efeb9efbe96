import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { sharedInfra } from '../helpers/infra.js'
import { consumeSettled } from '../helpers/kafka.js'
import { checkPublished, killOneWorker } from '../helpers/workers.js'

t.test('WORKERS=2 on Kafka: a worker killed -9 while telemetry flows loses no answered record', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const topic = `telemetry-${randomUUID()}`
  const ok = await killOneWorker(t, t.testdir(), { BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_TELEMETRY: topic, KAFKA_TOPIC_PARTITIONS: '3' })
  checkPublished(t, ok, await consumeSettled(infra.KAFKA_BROKERS, topic, ok.size))
})
