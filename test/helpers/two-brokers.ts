import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Kafka, logLevel, type Admin, type ITopicConfig } from 'kafkajs'
import { eventually } from './settle.js'

const run = promisify(execFile)
const INFRA = fileURLToPath(new URL('../../scripts/infra.sh', import.meta.url))

interface Tap { teardown(fn: () => unknown): void }

export interface TwoBrokers {
  /** Node 1 (broker and the only controller): the bootstrap address a gateway is given. */
  brokers: string
  /** Creates topics with each partition's replicas named: `[[1], [2], [1]]` puts partition 1 on node 2 alone. */
  createTopics(topics: ReadonlyArray<{ topic: string, replicas: number[][] }>): Promise<void>
  /** The leader of each partition of `topic`. */
  leaders(topic: string): Promise<number[]>
  /** SIGKILL node 2, as a crash: its partitions have no leader until startBroker2. */
  killBroker2(): Promise<void>
  /** Node 2 again, on its port with its data. */
  startBroker2(): Promise<void>
}

/**
 * A Kafka of this test alone with two brokers on loopback (scripts/infra.sh
 * `up-kafka-only` then `up-broker2`), so that partitions can have different
 * leaders. The shared Kafka is one process, where every partition shares the
 * one leader. The internal topics (group offsets, transaction state) are made
 * while node 1 is alone, so they live there and survive node 2's death.
 */
export async function twoBrokers (t: Tap): Promise<TwoBrokers> {
  const runDir = mkdtempSync(join(tmpdir(), 'gw-brokers-'))
  const opts = { env: { ...process.env, GATEWAY_INFRA_RUN: runDir }, maxBuffer: 1 << 20 }
  const infra = async (command: string): Promise<string> => (await run('bash', [INFRA, command], opts)).stdout
  t.teardown(() => infra('down'))
  const brokers = /KAFKA_BROKERS=(\S+)/.exec(await infra('up-kafka-only'))![1]!
  const kafka = new Kafka({ clientId: 'test-brokers', brokers: [brokers], logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  t.teardown(() => admin.disconnect())
  await internalTopics(kafka, admin)
  await infra('up-broker2')
  await eventually(async () => (await admin.describeCluster()).brokers.length, n => n === 2, 30_000, 250)
  for (const topic of ['__consumer_offsets', '__transaction_state']) {
    const where = await leadersOf(admin, topic)
    if (where.some(l => l !== 1)) throw new Error(`${topic} is led by ${where.join(',')}, not node 1 alone`)
  }
  return {
    brokers,
    createTopics: async topics => {
      const configs: ITopicConfig[] = topics.map(({ topic, replicas }) => ({ topic, replicaAssignment: replicas.map((r, partition) => ({ partition, replicas: r })) }))
      await admin.createTopics({ topics: configs, waitForLeaders: true })
    },
    leaders: topic => leadersOf(admin, topic),
    killBroker2: async () => { await infra('kill-broker2') },
    startBroker2: async () => { await infra('up-broker2') }
  }
}

async function leadersOf (admin: Admin, topic: string): Promise<number[]> {
  const { topics } = await admin.fetchTopicMetadata({ topics: [topic] })
  return topics[0]!.partitions.sort((a, b) => a.partitionId - b.partitionId).map(p => p.leader)
}

/** Asking for a group's and a transaction's coordinator makes the broker create their topics. */
async function internalTopics (kafka: Kafka, admin: Admin): Promise<void> {
  await admin.describeGroups(['test-brokers'])
  const producer = kafka.producer({ transactionalId: 'test-brokers', idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  try {
    const tx = await producer.transaction()
    await tx.abort()
  } finally {
    await producer.disconnect()
  }
}
