import { AssignerProtocol, type Consumer, type EachBatchPayload, type GroupDescription, type Kafka, type PartitionAssigner } from 'kafkajs'
import type { Logger } from 'pino'
import { assignPartitions } from './assignment.js'

/** The join protocol's name: members of one group must all speak it. */
export const PROTOCOL = 'gateway-runs-v1'
/** A session is taken as lapsed this long before the broker would let it expire, for the time an answer takes to come back. */
const LEASE_MARGIN_MS = 1000

export interface GroupOptions {
  groupId: string
  runsTopic: string
  commandsTopic: string
  sessionTimeoutMs: number
  /** Where other members reach this one (its peer listener), published in its join metadata. */
  url: string
  log: Logger
  /** Counts the consumer's requests. */
  count: (consumer: Consumer) => Consumer
}

/** A fetched stretch of one partition: its messages and the offset after it. */
export interface Fetched {
  partition: number
  messages: Array<{ key: string, value: string, headers: Record<string, string>, offset: number }>
  nextOffset: number
  heartbeat: () => Promise<void>
}

export interface GroupHandlers {
  /** Partitions this member now owns (called in the join, before anything of them is fetched). */
  assigned(partitions: number[]): void
  /** Partitions it no longer owns. */
  revoked(partitions: number[]): void
  /** After every join: the group's layout may have changed. */
  joined(): void
  commands(fetched: Fetched): Promise<void>
  logged(fetched: Fetched): Promise<void>
  /** The runs topic's position after any fetch of it, control records included. */
  position(partition: number, nextOffset: number): void
}

/** What a member says of itself when it joins. */
interface JoinData {
  url: string
  owned: number[]
}

export function decodeJoinData (userData: Buffer): JoinData | undefined {
  try {
    const data = JSON.parse(userData.toString('utf8')) as Partial<JoinData>
    if (typeof data.url !== 'string' || !Array.isArray(data.owned)) return undefined
    return { url: data.url, owned: data.owned.filter(p => Number.isInteger(p)) }
  } catch {
    return undefined
  }
}

/**
 * This process as a member of the runs group: Kafka's group membership
 * decides which process owns which partition of the runs topic, with the
 * same partition of the commands topic beside it (the assignment gives
 * both to one member). A member owns its partitions while its session
 * lives; `held` turns false once it may have lapsed (no answer from the
 * coordinator for the session timeout, as after a freeze), whatever the
 * consumer has not noticed yet.
 */
export class RunsGroup {
  private readonly consumer: Consumer
  private owned = new Set<number>()
  private lastContact = -Infinity
  /** Successful heartbeats so far: a restart after a failure waits for one more, to know the session still stands. */
  heartbeats = 0

  constructor (kafka: Kafka, private readonly options: GroupOptions, private readonly handlers: GroupHandlers) {
    const assigner = this.assigner()
    this.consumer = options.count(kafka.consumer({
      groupId: options.groupId,
      sessionTimeout: options.sessionTimeoutMs,
      rebalanceTimeout: options.sessionTimeoutMs * 2,
      heartbeatInterval: Math.max(100, Math.floor(options.sessionTimeoutMs / 5)),
      maxWaitTimeInMs: 250,
      readUncommitted: false,
      allowAutoTopicCreation: false,
      partitionAssigners: [assigner]
    }))
    const { HEARTBEAT, GROUP_JOIN, END_BATCH_PROCESS, CRASH } = this.consumer.events
    this.consumer.on(HEARTBEAT, () => {
      this.lastContact = performance.now()
      this.heartbeats++
    })
    this.consumer.on(GROUP_JOIN, ({ payload }) => {
      this.lastContact = performance.now()
      this.rebalanced(payload.memberAssignment[options.runsTopic] ?? [])
    })
    this.consumer.on(END_BATCH_PROCESS, ({ payload }) => {
      if (payload.topic === options.runsTopic) handlers.position(payload.partition, Number(payload.lastOffset) + 1)
    })
    // A consumer that crashed joins again as a new member: until then it owns nothing.
    this.consumer.on(CRASH, ({ payload }) => {
      options.log.warn({ err: payload.error.message, restart: payload.restart }, 'runs group consumer crashed')
      this.rebalanced([])
    })
  }

  async start (): Promise<void> {
    await this.consumer.connect()
    await this.consumer.subscribe({ topics: [this.options.commandsTopic, this.options.runsTopic], fromBeginning: true })
    await this.consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: 1024,
      eachBatch: payload => this.batch(payload)
    })
  }

  /** Leaves the group: its partitions go to the others at once. */
  async stop (): Promise<void> {
    this.rebalanced([])
    await this.consumer.disconnect()
  }

  held (): boolean {
    return performance.now() - this.lastContact < this.options.sessionTimeoutMs - LEASE_MARGIN_MS
  }

  owns (partition: number): boolean {
    return this.owned.has(partition)
  }

  pause (topic: 'runs' | 'commands', partition: number): void {
    this.consumer.pause([{ topic: this.topic(topic), partitions: [partition] }])
  }

  resume (topic: 'runs' | 'commands', partition: number): void {
    this.consumer.resume([{ topic: this.topic(topic), partitions: [partition] }])
  }

  seek (topic: 'runs' | 'commands', partition: number, offset: number): void {
    this.consumer.seek({ topic: this.topic(topic), partition, offset: String(offset) })
  }

  describe (): Promise<GroupDescription> {
    return this.consumer.describeGroup()
  }

  private topic (which: 'runs' | 'commands'): string {
    return which === 'runs' ? this.options.runsTopic : this.options.commandsTopic
  }

  private rebalanced (partitions: number[]): void {
    const next = new Set(partitions)
    const revoked = [...this.owned].filter(p => !next.has(p))
    const added = partitions.filter(p => !this.owned.has(p))
    this.owned = next
    if (revoked.length > 0) this.handlers.revoked(revoked)
    if (added.length > 0) this.handlers.assigned(added)
    this.handlers.joined()
  }

  private async batch ({ batch, heartbeat }: EachBatchPayload): Promise<void> {
    if (batch.messages.length === 0) return
    const fetched: Fetched = {
      partition: batch.partition,
      messages: batch.messages.map(m => {
        const headers: Record<string, string> = {}
        for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = String(v)
        return { key: m.key?.toString() ?? '', value: m.value?.toString() ?? '', headers, offset: Number(m.offset) }
      }),
      nextOffset: Number(batch.lastOffset()) + 1,
      heartbeat
    }
    if (batch.topic === this.options.runsTopic) await this.handlers.logged(fetched)
    else await this.handlers.commands(fetched)
  }

  /** Co-partitioned and sticky: a member gets the same partitions of both topics, and keeps what it had where it can. */
  private assigner (): PartitionAssigner {
    const { runsTopic, commandsTopic, url } = this.options
    return ({ cluster }) => ({
      name: PROTOCOL,
      version: 1,
      protocol: () => ({
        name: PROTOCOL,
        metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics: [commandsTopic, runsTopic], userData: Buffer.from(JSON.stringify({ url, owned: [...this.owned] })) })
      }),
      assign: async ({ members }) => {
        const count = cluster.findTopicPartitionMetadata(runsTopic).length
        const described = members.map(m => ({ memberId: m.memberId, owned: decodeJoinData(AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.userData ?? Buffer.alloc(0))?.owned ?? [] }))
        const plan = assignPartitions(described, count)
        return [...plan].map(([memberId, partitions]) => ({
          memberId,
          memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 1, assignment: { [runsTopic]: partitions, [commandsTopic]: partitions }, userData: Buffer.alloc(0) })
        }))
      }
    })
  }
}
