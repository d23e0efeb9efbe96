import { CompressionTypes, type Kafka, type Message, type Producer, type Admin } from 'kafkajs'
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

/** One topic's producer: its sends, one at a time, and what it knows of its own failures. */
interface Lane {
  readonly topic: string
  producer: Producer | undefined
  connecting: Promise<Producer> | undefined
  tail: Promise<unknown>
  /** Why its last send or connect failed, until one succeeds. */
  down: string | undefined
}

/**
 * Kafka (or Redpanda) through kafkajs: idempotent producers with acks = all,
 * one per topic, their record batches compressed (KAFKA_COMPRESSION).
 *
 * A topic's sends are serialised, one request in flight: kafkajs's
 * idempotent producer loses messages when several sends to one partition
 * overlap (kafkajs #1005), and callers batch anyway, so a send that waits
 * simply carries a bigger batch. Each topic has a producer of its own, and
 * so connections and an in-flight request of its own: a send of run events
 * that waits out a leader election never holds telemetry back.
 * Retries are bounded so a broker outage surfaces as an error within seconds
 * instead of a send that hangs until the broker returns.
 *
 * A failed send or connect marks its topic down, a failed readiness probe
 * every topic (`unavailable` says why), so callers that answer clients can
 * refuse at once instead of waiting for a deadline; while anything is down
 * the bus reconnects and probes every second on its own, and the first
 * success marks it up again.
 */
export class KafkaBus implements FollowableBus {
  readonly kind = 'kafka'
  private readonly kafka: Kafka
  /** Our produce encoder is in kafkajs (installFastProduce). */
  private readonly fastProduce: boolean
  private readonly topics: string[]
  private readonly compression: CompressionTypes
  private readonly lanes = new Map<string, Lane>()
  /** The topics exist (created at the first connect): shared by every lane and subscription. */
  private topicsReady: Promise<void> | undefined
  private topicsCreated = false
  /** The readiness probe's admin client, kept while it works: probes come every few seconds. */
  private probeAdmin: Admin | undefined
  /** The probe running now: concurrent readiness checks share it rather than race over one admin client. */
  private probing: Promise<void> | undefined
  /** Why the last probe failed: the cluster, not one topic. */
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
    this.compression = config.kafkaCompression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None
  }

  /** Creates the topics in the background: the gateway starts (not ready) while the broker is away. */
  async start (): Promise<void> {
    this.ensureTopics().catch(err => this.log.warn({ err: err.message }, 'kafka not reachable yet; will retry on demand'))
  }

  publish (topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    const lane = this.lane(topic)
    const run = lane.tail.then(() => this.send(lane, messages))
    lane.tail = run.catch(() => undefined)
    return run
  }

  /** A consumer group of its own on `topic`, started once the topics exist. */
  subscribe (topic: string, options: SubscribeOptions, handler: (messages: StoredMessage[]) => Promise<void>): Subscription {
    return new KafkaSubscription(this.kafka, topic, options, handler, () => this.ensureTopics(), this.log)
  }

  /** Why `topic` (without one: any topic) cannot take messages now, if that is known. */
  unavailable (topic?: string): string | undefined {
    if (this.down !== undefined) return this.down
    if (topic !== undefined) return this.lanes.get(topic)?.down
    for (const lane of this.lanes.values()) if (lane.down !== undefined) return lane.down
    return undefined
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
        const kept = admin
        if (kept) {
          try {
            await this.ask(kept)
            return
          } catch {
            // kafkajs asks a random broker of its client's pool and fails when that one has died since,
            // although the others answer (a broker that led only another topic's partitions): a fresh
            // client starts from the bootstrap brokers and learns only the live ones.
            if (this.probeAdmin === kept) this.probeAdmin = undefined
            kept.disconnect().catch(() => undefined)
          }
        }
        admin = this.kafka.admin({ retry: { retries: 0 } })
        await admin.connect()
        // A connect that comes after the deadline is of an admin client already let go.
        if (!failed) this.probeAdmin = admin
        await this.ask(admin)
      })()])
    } catch (err) {
      failed = true
      if (this.probeAdmin === admin) this.probeAdmin = undefined
      // Not awaited: a broker that does not answer may not answer the disconnect either.
      admin?.disconnect().catch(() => undefined)
      this.markDown(undefined, err)
      throw err
    } finally {
      clearTimeout(timer)
    }
    // Topics still being created (at start): not ready, but nothing is known to have failed.
    if (!this.topicsCreated) {
      this.ensureTopics().catch(() => undefined)
      throw new Error('topics not created yet')
    }
    this.down = undefined
    this.rearm()
  }

  /**
   * Not describeCluster once the topics exist: for it kafkajs fetches the
   * metadata of every topic in the cluster, refuses the whole answer when one
   * partition of any topic has no leader (a runs partition whose broker died,
   * another application's topic) and retries past the deadline, which would
   * mark the bus down and refuse telemetry. Telemetry's own topic answers the
   * question: the cluster is there, and the topic whose sends answer clients
   * at once can take them. The other topics' leaders are known from their
   * own sends (their lanes).
   */
  private async ask (admin: Admin): Promise<void> {
    if (this.topicsCreated) await admin.fetchTopicMetadata({ topics: [this.config.topicTelemetry] })
    else await admin.describeCluster()
  }

  /** Why `lane` (or, without one, the cluster) is down; while anything is, a check every RECHECK_MS. */
  private markDown (lane: Lane | undefined, err: unknown): void {
    const reason = (err as Error).message ?? String(err)
    if (lane === undefined) this.down = reason
    else lane.down = reason
    this.rearm()
  }

  private rearm (): void {
    const anyDown = this.down !== undefined || [...this.lanes.values()].some(l => l.down !== undefined)
    if (!anyDown || this.closed) {
      clearTimeout(this.recheck)
      this.recheck = undefined
      return
    }
    this.recheck ??= setTimeout(() => {
      this.recheck = undefined
      if (this.closed) return
      // Failures mark them down again, and so schedule the next check.
      if (this.down !== undefined) this.probe().catch(() => undefined)
      for (const lane of this.lanes.values()) {
        if (lane.down !== undefined) this.connect(lane).then(() => { lane.down = undefined; this.rearm() }, () => undefined)
      }
    }, RECHECK_MS)
    this.recheck.unref()
  }

  async close (): Promise<void> {
    this.closed = true
    clearTimeout(this.recheck)
    await this.probing?.catch(() => undefined)
    await this.probeAdmin?.disconnect().catch(() => undefined)
    for (const lane of this.lanes.values()) {
      await lane.tail
      await lane.producer?.disconnect().catch(() => undefined)
    }
  }

  private lane (topic: string): Lane {
    let lane = this.lanes.get(topic)
    if (lane === undefined) this.lanes.set(topic, lane = { topic, producer: undefined, connecting: undefined, tail: Promise.resolve(), down: undefined })
    return lane
  }

  private async send (lane: Lane, messages: readonly OutgoingMessage[]): Promise<void> {
    const producer = await this.connect(lane)
    try {
      // Our produce encoder writes a Splice; kafkajs's own takes only whole values.
      await producer.send({ topic: lane.topic, acks: -1, compression: this.compression, messages: this.fastProduce ? messages as Message[] : messages.map(joined) })
    } catch (err) {
      // A producer that failed may hold sequence state the broker no longer
      // agrees with; the next send starts from a fresh one.
      this.reset(lane, producer)
      this.markDown(lane, err)
      throw err
    }
    // The broker answered: the cluster is there, and so is this topic's leader.
    if (lane.down !== undefined || this.down !== undefined) {
      lane.down = undefined
      this.down = undefined
      this.rearm()
    }
  }

  private connect (lane: Lane): Promise<Producer> {
    if (lane.producer) return Promise.resolve(lane.producer)
    if (this.closed) return Promise.reject(new Error('bus closed'))
    lane.connecting ??= (async () => {
      const producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: keyPartitioner })
      try {
        await producer.connect()
        await this.ensureTopics()
        lane.producer = producer
        this.log.info({ brokers: this.config.kafkaBrokers, topic: lane.topic }, 'kafka producer connected')
        return producer
      } catch (err) {
        await producer.disconnect().catch(() => undefined)
        this.markDown(lane, err)
        throw err
      } finally {
        lane.connecting = undefined
      }
    })()
    return lane.connecting
  }

  private reset (lane: Lane, producer: Producer): void {
    if (lane.producer !== producer) return
    lane.producer = undefined
    producer.disconnect().catch(() => undefined)
  }

  /** Creates the topics that are missing, once: a failure lets the next caller try again. */
  private ensureTopics (): Promise<void> {
    if (this.closed) return Promise.reject(new Error('bus closed'))
    this.topicsReady ??= this.createTopics().then(
      () => { this.topicsCreated = true },
      err => { this.topicsReady = undefined; throw err })
    return this.topicsReady
  }

  private async createTopics (): Promise<void> {
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
