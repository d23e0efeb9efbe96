import type { Admin, Consumer, Kafka } from 'kafkajs'
import type { Logger } from 'pino'
import { LIFECYCLE_EVENT } from '../catalogue.js'
import { decodeEvent } from '../events.js'
import type { RunEvent } from '../types.js'
import { decodeLogged } from './log-codec.js'

/** A tail nobody has used for this long is stopped. */
const IDLE_MS = 60_000
/** Longest wait of a new watcher for the tail to be placed at the end of the topic. */
const READY_MS = 10_000
const LIFECYCLE_TYPES: ReadonlySet<string> = new Set(Object.values(LIFECYCLE_EVENT))

export interface TailOptions {
  kafka: Kafka
  admin: Admin
  /** A group of this process alone: it reads every partition. */
  groupId: string
  topic: string
  log: Logger
  /** Counts the consumer's requests. */
  count: (consumer: Consumer) => Consumer
}

/**
 * The run transitions of the whole cluster as they are committed, for
 * `/runs:watch`: a consumer of every partition of the runs topic
 * (read_committed) that exists only while this process has watchers (and a
 * minute after), placed at the end of the topic when it starts. It keeps
 * nothing: each lifecycle event goes to `publish` (the tenant feed) and is
 * forgotten.
 */
export class RunTail {
  private consumer: Consumer | undefined
  private ready: Promise<void> | undefined
  private users = 0
  private idle: NodeJS.Timeout | undefined

  constructor (private readonly options: TailOptions, private readonly publish: (event: RunEvent) => void) {}

  /** Resolves once transitions committed from now on will be published; call `release` when done. */
  async acquire (): Promise<() => void> {
    this.users++
    clearTimeout(this.idle)
    let released = false
    const release = (): void => {
      if (released) return
      released = true
      if (--this.users === 0) this.idle = setTimeout(() => { void this.stop() }, IDLE_MS).unref()
    }
    try {
      this.ready ??= this.start()
      let timer: NodeJS.Timeout | undefined
      await Promise.race([this.ready, new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`the runs topic could not be followed within ${READY_MS} ms`)), READY_MS) })]).finally(() => clearTimeout(timer))
    } catch (err) {
      release()
      throw err
    }
    return release
  }

  async stop (): Promise<void> {
    clearTimeout(this.idle)
    const consumer = this.consumer
    this.consumer = undefined
    this.ready = undefined
    await consumer?.disconnect().catch(() => undefined)
  }

  private async start (): Promise<void> {
    const { kafka, admin, groupId, topic, log } = this.options
    const consumer = this.options.count(kafka.consumer({ groupId, maxWaitTimeInMs: 250, readUncommitted: false, allowAutoTopicCreation: false }))
    this.consumer = consumer
    const placed = new Promise<void>((resolve, reject) => {
      consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
        const partitions = payload.memberAssignment[topic] ?? []
        admin.fetchTopicOffsets(topic).then(offsets => {
          for (const o of offsets) if (partitions.includes(o.partition)) consumer.seek({ topic, partition: o.partition, offset: o.high })
          resolve()
        }, reject)
      })
      consumer.on(consumer.events.CRASH, ({ payload }) => { if (!payload.restart) reject(payload.error) })
    })
    try {
      await consumer.connect()
      await consumer.subscribe({ topics: [topic], fromBeginning: false })
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            const key = m.key?.toString() ?? ''
            const text = m.value?.toString() ?? ''
            if (!LIFECYCLE_TYPES.has(typeOf(text))) continue
            const event = decodeLogged(key, text)
            if (event?.record !== undefined) this.publish(event)
          }
        }
      })
      await placed
      log.info({ topic }, 'following the run transitions of the cluster for watchers')
    } catch (err) {
      this.ready = undefined
      this.consumer = undefined
      await consumer.disconnect().catch(() => undefined)
      throw err
    }
  }
}

function typeOf (text: string): string {
  try {
    return decodeEvent(text).type
  } catch {
    return ''
  }
}
