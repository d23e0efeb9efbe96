import { randomUUID } from 'node:crypto'
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs'

export interface Consumed {
  key: string
  value: string
  headers: Record<string, string>
  partition: number
  offset: string
}

function decode (partition: number, m: KafkaMessage): Consumed {
  const headers: Record<string, string> = {}
  for (const [k, v] of Object.entries(m.headers ?? {})) headers[k] = String(v)
  return { key: m.key?.toString() ?? '', value: m.value?.toString() ?? '', headers, partition, offset: m.offset }
}

/**
 * Reads `topic` from the beginning until `count` messages arrived, or until
 * `idleMs` passes with nothing new (to prove that nothing more comes).
 */
export async function consume (brokers: string, topic: string, count: number, idleMs = 3000): Promise<Consumed[]> {
  const kafka = new Kafka({ clientId: 'test-consumer', brokers: brokers.split(','), logLevel: logLevel.NOTHING })
  const consumer = kafka.consumer({ groupId: `test-${randomUUID()}`, maxWaitTimeInMs: 100 })
  const out: Consumed[] = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await new Promise<void>(resolve => {
      let idle = setTimeout(resolve, idleMs + 10_000)
      consumer.run({
        eachMessage: async ({ partition, message }) => {
          out.push(decode(partition, message))
          clearTimeout(idle)
          if (out.length >= count) resolve()
          else idle = setTimeout(resolve, idleMs)
        }
      }).catch(() => resolve())
    })
  } finally {
    await consumer.disconnect()
  }
  return out
}

/**
 * Reads `topic` from the beginning until `expected` messages arrived (or
 * `timeoutMs` passed), then on for `settleMs` more, so a caller that
 * compares what it got with what it expected sees any extra (duplicate)
 * message instead of stopping at the first `expected`.
 */
export async function consumeSettled (brokers: string, topic: string, expected: number, settleMs = 3000, timeoutMs = 60_000): Promise<Consumed[]> {
  const kafka = new Kafka({ clientId: 'test-consumer', brokers: brokers.split(','), logLevel: logLevel.NOTHING })
  const consumer = kafka.consumer({ groupId: `test-${randomUUID()}`, maxWaitTimeInMs: 100 })
  const out: Consumed[] = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await new Promise<void>(resolve => {
      let timer = setTimeout(resolve, timeoutMs)
      const settle = (): void => { clearTimeout(timer); timer = setTimeout(resolve, settleMs) }
      consumer.run({
        eachMessage: async ({ partition, message }) => {
          out.push(decode(partition, message))
          if (out.length >= expected) settle()
        }
      }).catch(() => resolve())
    })
  } finally {
    await consumer.disconnect()
  }
  return out
}

/** The next offset of each partition of `topic` (where the next message will go). */
export async function endOffsets (brokers: string, topic: string): Promise<Map<number, bigint>> {
  const kafka = new Kafka({ clientId: 'test-admin', brokers: brokers.split(','), logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  try {
    return new Map((await admin.fetchTopicOffsets(topic)).map(p => [p.partition, BigInt(p.offset)]))
  } finally {
    await admin.disconnect()
  }
}
