import { randomUUID } from 'node:crypto'
import { Kafka, logLevel, type KafkaMessage } from 'kafkajs'
import { SETTLE_MS } from './settle.js'

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

export interface SettleOptions {
  /** Quiet this long after the last expected message before the count is taken as final. */
  settleMs?: number
  /** Fail when fewer than the expected messages arrived by then. */
  timeoutMs?: number
}

const describe = (m: Consumed): string => `${m.partition}@${m.offset} key=${m.key} message-id=${m.headers['message-id'] ?? '-'} ${m.value.slice(0, 120)}`

/**
 * Reads `topic` from the beginning and returns exactly `count` messages. It
 * does not stop at the count: it keeps reading until the topic has been
 * quiet for `settleMs`, and fails at once on message `count + 1` (a late
 * duplicate or a message that should never have been published), as it
 * fails when fewer than `count` arrive within `timeoutMs`.
 */
export function consume (brokers: string, topic: string, count: number, options: SettleOptions = {}): Promise<Consumed[]> {
  return consumeBetween(brokers, topic, count, count, options)
}

/**
 * Like `consume`, for a count known only within bounds (records answered 500
 * may or may not have been written): at least `min` messages, then quiet for
 * `settleMs`; fails at once on message `max + 1`.
 */
export async function consumeBetween (brokers: string, topic: string, min: number, max: number, { settleMs = SETTLE_MS, timeoutMs = 30_000 }: SettleOptions = {}): Promise<Consumed[]> {
  const kafka = new Kafka({ clientId: 'test-consumer', brokers: brokers.split(','), logLevel: logLevel.NOTHING })
  const consumer = kafka.consumer({ groupId: `test-${randomUUID()}`, maxWaitTimeInMs: 100 })
  const out: Consumed[] = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await new Promise<void>((resolve, reject) => {
      let quiet: NodeJS.Timeout | undefined
      const deadline = setTimeout(() => {
        const what = out.length < min ? `expected at least ${min}` : `never quiet for ${settleMs} ms`
        reject(new Error(`${topic}: ${out.length} message(s) within ${timeoutMs} ms, ${what}: ${out.map(describe).join('; ')}`))
      }, timeoutMs)
      const settled = (): void => { clearTimeout(deadline); resolve() }
      consumer.run({
        eachMessage: async ({ partition, message }) => {
          out.push(decode(partition, message))
          clearTimeout(quiet)
          if (out.length > max) {
            clearTimeout(deadline)
            reject(new Error(`${topic}: message ${out.length} arrived, expected at most ${max}: ${describe(out.at(-1)!)}; before it: ${out.slice(0, -1).map(describe).join('; ')}`))
          } else if (out.length >= min) {
            quiet = setTimeout(settled, settleMs)
          }
        }
      }).catch(reject)
      if (min === 0) quiet = setTimeout(settled, settleMs)
    })
  } finally {
    await consumer.disconnect()
  }
  return out
}

/**
 * `consumeBetween` with no upper bound, for at-least-once topics where the
 * caller counts the copies itself: at least `expected` messages within
 * `timeoutMs` (or it fails), then on until quiet for `settleMs`, so a
 * duplicate after the first `expected` is in the result.
 */
export function consumeSettled (brokers: string, topic: string, expected: number, settleMs = SETTLE_MS, timeoutMs = 60_000): Promise<Consumed[]> {
  return consumeBetween(brokers, topic, expected, Infinity, { settleMs, timeoutMs })
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
