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
