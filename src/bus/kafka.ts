import type { Kafka, Message, Producer, Admin } from 'kafkajs'
import type { Logger } from 'pino'
import { isCluster, type Config } from '../config/index.js'
import { kafkaClient } from './kafka-client.js'
import { installFastProduce } from './kafka-produce.js'
import { KafkaSubscription } from './kafka-subscription.js'
import { keyPartitioner } from './partitioner.js'
import { joined, type FollowableBus, type OutgoingMessage, type StoredMessage, type Subscription, type SubscribeOptions } from './types.js'

/** While the bus is known to be down, how often it checks whether it is back. */
const RECHECK_MS = 1000
/**
 * A readiness probe the broker has not answered by then marks the bus down.
 * Below the readiness check's own timeout (2 s in ops/readiness.ts): else a
 * broker that stopped answering (frozen, or gone while a request was out)
 * shows as not ready on /health/ready while the bus is not known to be down,
 * and telemetry keeps sending into it and answers 500 after its retries
 * instead of 503 at once.
 */
const PROBE_DEADLINE_MS = 1500

/**
 * Kafka (or Redpanda) through kafkajs: an idempotent producer with acks = all.
 *
 * Sends are serialised, one request in flight: kafkajs's idempotent producer
 * loses messages when several sends to one partition overlap (kafkajs #1005),
 * and callers batch anyway, so a send that waits simply carries a bigger batch.
 * Retries are bounded so a broker outage surfaces as an error within seconds
 * instead of a send that hangs until the broker returns.
 *
 * A failed send, connect or readiness probe marks the bus down (`unavailable`
 * says why), so callers that answer clients can refuse at once instead of
 * waiting for a deadline; while it is down the bus reconnects and probes
 * every second on its own, and the first success marks it up again.
 */
export class KafkaBus implements FollowableBus {
  readonly kind = 'kafka'
  private readonly kafka: Kafka
  /** Our produce encoder is in kafkajs (installFastProduce). */
  private readonly fastProduce: boolean
  private readonly topics: string[]
  private producer: Producer | undefined
  private connecting: Promise<Producer> | undefined
  private tail: Promise<unknown> = Promise.resolve()
  /** The readiness probe's admin client, kept while it works: probes come every few seconds. */
  private probeAdmin: Admin | undefined
  /** The probe running now: concurrent readiness checks share it rather than race over one admin client. */
  private probing: Promise<void> | undefined
  private down: string | undefined
  private recheck: NodeJS.Timeout | undefined
  private closed = false

  /** `kafka` replaces the client made from `config` (tests drive the bus with a stand-in). */
  constructor (private readonly config: Config, private readonly log: Logger, kafka?: Kafka) {
    this.kafka = kafka ?? kafkaClient(config, log)
    this.fastProduce = installFastProduce()
    if (!this.fastProduce) log.warn('kafkajs is not the version its produce encoder was checked against: using its own, slower one')
    // In a cluster the runs' own topics are made by the runs group, with the retention and partitions runs need.
    this.topics = isCluster(config) ? [config.topicTelemetry, config.topicEvidence] : [config.topicTelemetry, config.topicEvidence, config.topicRuns]
  }

  /** Connects in the background: the gateway starts (not ready) while the broker is away. */
  async start (): Promise<void> {
    this.connect().catch(err => this.log.warn({ err: err.message }, 'kafka not reachable yet; will retry on demand'))
  }

  publish (topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    const run = this.tail.then(() => this.send(topic, messages))
    this.tail = run.catch(() => undefined)
    return run
  }

  /** A consumer group of its own on `topic`, started once the topics exist (the producer's connect makes them). */
  subscribe (topic: string, options: SubscribeOptions, handler: (messages: StoredMessage[]) => Promise<void>): Subscription {
    return new KafkaSubscription(this.kafka, topic, options, handler, () => this.connect(), this.log)
  }

  unavailable (): string | undefined {
    return this.down
  }

  probe (): Promise<void> {
    this.probing ??= this.check().finally(() => { this.probing = undefined })
    return this.probing
  }

  private async check (): Promise<void> {
    let admin = this.probeAdmin
    let timer: NodeJS.Timeout | undefined
    let failed = false
    try {
      const deadline = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`the broker did not answer within ${PROBE_DEADLINE_MS} ms`)), PROBE_DEADLINE_MS)
      })
      await Promise.race([deadline, (async () => {
        if (!admin) {
          admin = this.kafka.admin({ retry: { retries: 0 } })
          await admin.connect()
          // A connect that comes after the deadline is of an admin client already let go.
          if (!failed) this.probeAdmin = admin
        }
        await admin.describeCluster()
      })()])
    } catch (err) {
      failed = true
      if (this.probeAdmin === admin) this.probeAdmin = undefined
      // Not awaited: a broker that does not answer may not answer the disconnect either.
      admin?.disconnect().catch(() => undefined)
      this.markDown(err)
      throw err
    } finally {
      clearTimeout(timer)
    }
    // Still connecting (at start): not ready, but nothing is known to have failed.
    if (!this.producer) throw new Error('producer not connected')
    this.markUp()
  }

  private markDown (err: unknown): void {
    this.down = (err as Error).message ?? String(err)
    if (this.recheck || this.closed) return
    this.recheck = setTimeout(() => {
      this.recheck = undefined
      if (this.closed || this.down === undefined) return
      // Probe failures mark it down again, and so schedule the next check.
      this.connect().then(() => this.probe()).catch(err => this.markDown(err))
    }, RECHECK_MS)
    this.recheck.unref()
  }

  private markUp (): void {
    this.down = undefined
    clearTimeout(this.recheck)
    this.recheck = undefined
  }

  async close (): Promise<void> {
    this.closed = true
    clearTimeout(this.recheck)
    await this.probing?.catch(() => undefined)
    await this.probeAdmin?.disconnect().catch(() => undefined)
    await this.tail
    await this.producer?.disconnect().catch(() => undefined)
  }

  private async send (topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    const producer = await this.connect()
    try {
      // Our produce encoder writes a Splice; kafkajs's own takes only whole values.
      await producer.send({ topic, acks: -1, messages: this.fastProduce ? messages as Message[] : messages.map(joined) })
    } catch (err) {
      // A producer that failed may hold sequence state the broker no longer
      // agrees with; the next send starts from a fresh one.
      this.reset(producer)
      this.markDown(err)
      throw err
    }
    this.markUp()
  }

  private connect (): Promise<Producer> {
    if (this.producer) return Promise.resolve(this.producer)
    if (this.closed) return Promise.reject(new Error('bus closed'))
    this.connecting ??= (async () => {
      const producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: keyPartitioner })
      try {
        await producer.connect()
        await this.ensureTopics()
        this.producer = producer
        this.log.info({ brokers: this.config.kafkaBrokers }, 'kafka producer connected')
        return producer
      } catch (err) {
        await producer.disconnect().catch(() => undefined)
        this.markDown(err)
        throw err
      } finally {
        this.connecting = undefined
      }
    })()
    return this.connecting
  }

  private reset (producer: Producer): void {
    if (this.producer !== producer) return
    this.producer = undefined
    producer.disconnect().catch(() => undefined)
  }

  private async ensureTopics (): Promise<void> {
    const admin: Admin = this.kafka.admin()
    try {
      await admin.connect()
      const existing = new Set(await admin.listTopics())
      const missing = this.topics.filter(t => !existing.has(t))
      if (missing.length > 0) {
        await admin.createTopics({ waitForLeaders: true, topics: missing.map(topic => ({ topic, numPartitions: this.config.kafkaTopicPartitions })) })
        this.log.info({ topics: missing, partitions: this.config.kafkaTopicPartitions }, 'kafka topics created')
      }
    } finally {
      await admin.disconnect().catch(() => undefined)
    }
  }
}
