import type { Admin, Consumer, Kafka } from 'kafkajs'
import type { Logger } from 'pino'
import type { StoredMessage, Subscription, SubscribeOptions } from './types.js'

/** How often `caughtUp` compares the group's committed offsets with the topic's end. */
const CATCH_UP_POLL_MS = 100
/** Delay before a consumer that failed to start or crashed is started again. */
const RESTART_MS = 2000

/**
 * A consumer group following one topic: each batch of a partition is handed
 * to the handler, and its offset committed once the handler resolved, so the
 * group's committed offsets say what has been handled (at least once: a
 * crash between the two hands the batch again). `caughtUp` compares them
 * with the topic's end offsets, whichever process of the group handled them.
 */
export class KafkaSubscription implements Subscription {
  private consumer: Consumer | undefined
  private admin: Admin | undefined
  private stopped = false
  private timer: NodeJS.Timeout | undefined

  constructor (
    private readonly kafka: Kafka,
    private readonly topic: string,
    private readonly options: SubscribeOptions,
    private readonly handler: (messages: StoredMessage[]) => Promise<void>,
    private readonly ready: () => Promise<unknown>,
    private readonly log: Logger
  ) {
    this.run()
  }

  /** Bounded by `timeoutMs` even while the broker does not answer (a connect alone may take longer). */
  async caughtUp (timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<false>(resolve => { timer = setTimeout(() => resolve(false), timeoutMs) })
    try {
      return await Promise.race([this.compare(performance.now() + timeoutMs), late])
    } finally {
      clearTimeout(timer)
    }
  }

  private async compare (deadline: number): Promise<boolean> {
    try {
      this.admin ??= await this.connectAdmin()
      const ends = await this.admin.fetchTopicOffsets(this.topic)
      while (!this.stopped) {
        const [committed] = await this.admin.fetchOffsets({ groupId: this.options.group, topics: [this.topic] })
        const at = new Map((committed?.partitions ?? []).map(p => [p.partition, BigInt(p.offset)]))
        if (ends.every(p => BigInt(p.high) === BigInt(p.low) || (at.get(p.partition) ?? -1n) >= BigInt(p.high))) return true
        if (performance.now() + CATCH_UP_POLL_MS > deadline) return false
        await new Promise(resolve => setTimeout(resolve, CATCH_UP_POLL_MS))
      }
    } catch (err) {
      this.log.warn({ err: (err as Error).message, topic: this.topic }, 'could not compare a subscription with the end of its topic')
      // The next look connects afresh.
      const admin = this.admin
      this.admin = undefined
      await admin?.disconnect().catch(() => undefined)
    }
    return false
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.consumer?.disconnect().catch(() => undefined)
    await this.admin?.disconnect().catch(() => undefined)
  }

  private async connectAdmin (): Promise<Admin> {
    const admin = this.kafka.admin()
    await admin.connect()
    return admin
  }

  /** Starts the consumer (the topics exist once the bus is ready), and again after a crash. */
  private run (): void {
    if (this.stopped) return
    this.start().catch(err => {
      this.log.warn({ err: (err as Error).message, topic: this.topic }, 'subscription not started; retrying')
      this.consumer?.disconnect().catch(() => undefined)
      this.consumer = undefined
      if (!this.stopped) this.timer = setTimeout(() => this.run(), RESTART_MS).unref()
    })
  }

  private async start (): Promise<void> {
    await this.ready()
    if (this.stopped) return
    const consumer = this.kafka.consumer({ groupId: this.options.group, maxWaitTimeInMs: 250, allowAutoTopicCreation: false })
    this.consumer = consumer
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart || this.stopped) return
      this.log.warn({ err: payload.error.message, topic: this.topic }, 'subscription stopped; restarting')
      consumer.disconnect().catch(() => undefined).finally(() => { if (this.consumer === consumer) this.run() })
    })
    await consumer.connect()
    // Stopped while connecting: `stop` disconnected it before it was connected.
    if (this.stopped) {
      await consumer.disconnect()
      return
    }
    await consumer.subscribe({ topic: this.topic, fromBeginning: this.options.fromStart })
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat }) => {
        const messages: StoredMessage[] = batch.messages.map(m => {
          const headers: Record<string, string> = {}
          for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = String(v)
          return { topic: batch.topic, offset: Number(m.offset), key: m.key?.toString() ?? '', value: m.value?.toString() ?? '', headers, timestamp: Number(m.timestamp) }
        })
        if (messages.length > 0) await this.handler(messages)
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }])
        await heartbeat()
      }
    })
  }
}
