import { Agent } from 'node:http'
import type { Admin, Consumer, Kafka, Producer } from 'kafkajs'
import { Counter, type Registry } from 'prom-client'
import type { Logger } from 'pino'
import { keyPartitioner, MicroBatcher, partitionOfKey } from '../../bus/index.js'
import { refusal } from '../../errors.js'
import type { RunHub } from '../hub.js'
import type { EventLog, RunManager } from '../manager.js'
import type { Owner } from '../../state/index.js'
import type { RunStore } from '../store.js'
import type { RunEvent } from '../types.js'
import { COMMAND_SCHEMA, encodeCommand, type RunCommand } from './commands.js'
import { RunsGroup, type Fetched } from './group.js'
import { OwnerMap } from './owners.js'
import { PartitionOwner } from './partition.js'
import { RunTail } from './tail.js'

const START_RETRY_MIN_MS = 500
const START_RETRY_MAX_MS = 10_000
/** Commands waiting for the broker's acknowledgment before new ones are refused (503). */
const MAX_PENDING_COMMANDS = 10_000
const COMMAND_TIMEOUT_MS = 10_000
const DAY_MS = 24 * 3600 * 1000
/**
 * A partition no process of this DATA_DIR has served for this long is
 * dropped from its store (as Kafka Streams' state.cleanup.delay.ms): a node
 * keeps its own share, and a partition back within the delay is read only
 * from where its copy stopped.
 */
const CLEANUP_AFTER_MS = 10 * 60_000
const CLEANUP_CHECK_MS = 60_000

export interface ClusterSettings {
  groupId: string
  runsTopic: string
  commandsTopic: string
  /** Partitions of both topics when the gateway creates them. */
  partitions: number
  /** Both topics keep their messages at least this long. */
  retentionMs: number
  sessionTimeoutMs: number
  /** This process's peer listener, as other members reach it. */
  url: string
  /** This process among those sharing DATA_DIR: it names its own watch group, and says whose partitions are still served. */
  self: Owner
  maxBatch: number
  lingerMs: number
}

export interface ClusterParts {
  kafka: Kafka
  /** Counts the Kafka requests of the runs by API (`gateway_runs_kafka_requests_total`), when given. */
  registry?: Registry
  store: RunStore
  manager: () => RunManager
  hub: RunHub
  /** Told of every transition of the cluster while someone watches (`/runs:watch`). */
  transition: (event: RunEvent) => void
  log: Logger
}

/** What the request counter needs of a kafkajs producer, consumer or admin. */
interface KafkaClientLike {
  on(event: string, listener: (event: { payload: { apiName: string } }) => void): unknown
}

/** Where a request for a run is served. */
export type Route =
  | { kind: 'here', owner: PartitionOwner }
  | { kind: 'there', url: string }
  | { kind: 'unavailable', why: string }

/**
 * Runs across processes and nodes, on Kafka's own coordination (the Kafka
 * Streams model): a run belongs to a partition of the runs topic by its
 * id; the runs group assigns partitions to processes; the owner of a
 * partition executes its runs and writes their events through a
 * transactional producer whose id names the partition (fencing any earlier
 * owner); starts and cancels reach it as commands on the commands topic,
 * keyed by run id, whichever process took the request. Reads go to the
 * owner (`route`); the transitions of all runs are followed only while
 * someone watches them (`tail`). docs/scaling.md has the model and its costs.
 */
export class RunsCluster {
  readonly events: EventLog
  readonly owners: OwnerMap
  readonly tail: RunTail
  readonly peerAgent = new Agent({ keepAlive: true, maxFreeSockets: 64 })
  private readonly group: RunsGroup
  private readonly running = new Map<number, PartitionOwner>()
  private count = 0
  private admin: Admin | undefined
  private commandProducer: Producer | undefined
  private readonly commands: MicroBatcher
  private started = false
  private stopped = false
  private retry: NodeJS.Timeout | undefined
  /** Partitions given up after a failure, taken up again after the next heartbeat proves the session stands. */
  private readonly failed = new Map<number, number>()
  /** Partitions of the store that no process of DATA_DIR serves, since when (performance.now()). */
  private readonly unserved = new Map<number, number>()
  private cleanup: NodeJS.Timeout | undefined
  private readonly log: Logger
  /** Counts the requests of a kafkajs client the runs made, and returns it. */
  readonly counted: <C extends Producer | Consumer | Admin>(client: C) => C

  constructor (private readonly settings: ClusterSettings, private readonly parts: ClusterParts) {
    this.log = parts.log
    const requests = parts.registry && new Counter({ name: 'gateway_runs_kafka_requests_total', help: 'Kafka requests the runs made, by API: what runs cost the brokers (docs/scaling.md)', labelNames: ['api'], registers: [parts.registry] })
    this.counted = client => {
      if (requests) (client as KafkaClientLike).on(client.events.REQUEST, ({ payload }) => requests.inc({ api: payload.apiName }))
      return client
    }
    const admin = (): Admin => this.admin!
    this.group = new RunsGroup(parts.kafka, {
      groupId: settings.groupId,
      runsTopic: settings.runsTopic,
      commandsTopic: settings.commandsTopic,
      sessionTimeoutMs: settings.sessionTimeoutMs,
      url: settings.url,
      log: parts.log,
      count: this.counted
    }, {
      assigned: partitions => { for (const p of partitions) this.takeUp(p) },
      revoked: partitions => { for (const p of partitions) this.giveUp(p, 'revoked') },
      joined: () => { this.owners.invalidate(); this.retryFailed() },
      commands: fetched => this.on(fetched, (owner, f) => owner.commands(f)),
      logged: fetched => this.on(fetched, (owner, f) => owner.logged(f)),
      position: (p, next) => this.running.get(p)?.moved(next)
    })
    this.owners = new OwnerMap(this.group, settings.runsTopic, parts.log)
    this.tail = new RunTail({ kafka: parts.kafka, get admin () { return admin() }, groupId: `${settings.groupId}-watch-${settings.self.id}`, topic: settings.runsTopic, log: parts.log, count: this.counted }, parts.transition)
    this.events = {
      append: (runId, event) => this.running.get(this.partitionOf(runId))?.writer?.append(runId, event) ?? Promise.reject(new Error('this process does not own the run\'s partition'))
    }
    this.commands = new MicroBatcher({
      maxBatch: settings.maxBatch,
      lingerMs: settings.lingerMs,
      maxPending: MAX_PENDING_COMMANDS,
      timeoutMs: COMMAND_TIMEOUT_MS,
      publish: async messages => { await this.commandProducer!.send({ topic: settings.commandsTopic, acks: -1, messages: messages as never }) }
    })
  }

  /** Joins in the background, retrying while Kafka is away: until it has joined, runs are answered 503. */
  start (): void {
    void this.join(START_RETRY_MIN_MS)
    this.cleanup = setInterval(() => { this.dropUnserved().catch(err => this.log.warn({ err }, 'runs partitions not dropped')) }, CLEANUP_CHECK_MS).unref()
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearTimeout(this.retry)
    clearInterval(this.cleanup)
    await this.tail.stop()
    if (this.started) await this.group.stop().catch(err => this.log.warn({ err: (err as Error).message }, 'leaving the runs group failed'))
    for (const p of [...this.running.keys()]) this.giveUp(p, 'shutdown')
    await this.commandProducer?.disconnect().catch(() => undefined)
    await this.admin?.disconnect().catch(() => undefined)
    this.peerAgent.destroy()
  }

  /** Readiness: this process is a member of the runs group, with a live session; and which partitions it serves or is taking up. */
  state (): Record<string, unknown> {
    if (!this.started) throw new Error('not a member of the runs group yet')
    if (!this.group.held()) throw new Error('the runs group session may have lapsed')
    const owners = [...this.running.values()]
    return { serving: owners.filter(o => o.state === 'ready').map(o => o.partition).sort((a, b) => a - b), starting: owners.filter(o => o.state === 'starting').map(o => o.partition).sort((a, b) => a - b) }
  }

  /** The partition of the runs topic a run belongs to (the key's partition, as Kafka's default partitioner computes it). */
  partitionOf (runId: string): number {
    if (this.count === 0) throw refusal('runs_unavailable', { headers: { 'retry-after': '1' } })
    return partitionOfKey(runId, this.count)
  }

  /** Sends a command to the owner of its run's partition; resolves once Kafka has it (acks = all). */
  submit (command: RunCommand): Promise<void> {
    if (!this.started) return Promise.reject(refusal('runs_unavailable', { headers: { 'retry-after': '1' } }))
    const message = { key: command.run_id, value: encodeCommand(command), headers: { schema: COMMAND_SCHEMA, 'client-id': command.tenant_id }, partition: this.partitionOf(command.run_id) }
    return this.commands.add(message)
  }

  /** Where a request for the run is served: here (this process owns its partition), at another member, or nowhere yet. */
  async route (runId: string): Promise<Route> {
    if (!this.started) return { kind: 'unavailable', why: 'not a member of the runs group yet' }
    const partition = this.partitionOf(runId)
    const mine = this.running.get(partition)
    if (mine) return mine.state === 'ready' && this.group.held() ? { kind: 'here', owner: mine } : { kind: 'unavailable', why: `partition ${partition} is being taken up` }
    const url = await this.owners.ownerOf(partition)
    if (url === undefined || url === this.settings.url) return { kind: 'unavailable', why: `partition ${partition} has no owner now` }
    return { kind: 'there', url }
  }

  /** The owner of each partition, by URL (this process's own partitions under its own URL), or undefined while any has none. */
  async layout (): Promise<{ self: string, owners: ReadonlyMap<number, string> } | undefined> {
    const owners = await this.owners.all()
    if (owners === undefined || owners.size < this.count) return undefined
    return { self: this.settings.url, owners }
  }

  /** Whether this process serves `partition` now. */
  serves (partition: number): boolean {
    return this.running.get(partition)?.state === 'ready' && this.group.held()
  }

  private async join (delay: number): Promise<void> {
    if (this.stopped) return
    try {
      await this.prepare()
      await this.group.start()
      this.started = true
      this.log.info({ group: this.settings.groupId, partitions: this.count, url: this.settings.url }, 'joined the runs group')
    } catch (err) {
      this.log.warn({ err: (err as Error).message, retryInMs: delay }, 'the runs group could not be joined yet; retrying')
      this.retry = setTimeout(() => { void this.join(Math.min(delay * 2, START_RETRY_MAX_MS)) }, delay)
      this.retry.unref()
    }
  }

  /** The topics (made when missing: both with the same partitions and the retention runs need) and the command producer. */
  private async prepare (): Promise<void> {
    const { kafka } = this.parts
    const { runsTopic, commandsTopic, partitions, retentionMs } = this.settings
    this.admin ??= this.counted(kafka.admin())
    await this.admin.connect()
    const existing = new Set(await this.admin.listTopics())
    const missing = [runsTopic, commandsTopic].filter(t => !existing.has(t))
    if (missing.length > 0) {
      const configEntries = [{ name: 'retention.ms', value: String(retentionMs + DAY_MS) }, { name: 'cleanup.policy', value: 'delete' }]
      await this.admin.createTopics({ waitForLeaders: true, topics: missing.map(topic => ({ topic, numPartitions: partitions, configEntries })) }).catch(err => {
        if (!/already exists/i.test((err as Error).message)) throw err
      })
      this.log.info({ topics: missing, partitions }, 'run topics created')
    }
    const metadata = await this.admin.fetchTopicMetadata({ topics: [runsTopic, commandsTopic] })
    const counts = metadata.topics.map(t => t.partitions.length)
    if (counts[0] !== counts[1]) throw new Error(`${runsTopic} has ${counts[0]} partitions and ${commandsTopic} ${counts[1]}: TOPIC_RUNS and TOPIC_RUNS_CONTROL must have the same number`)
    this.count = counts[0]!
    // Not idempotent: a start sent twice by a retry is dropped by the owner, which knows the run by its id.
    this.commandProducer ??= this.counted(kafka.producer({ maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: keyPartitioner }))
    await this.commandProducer.connect()
  }

  private partitionContext (): ConstructorParameters<typeof PartitionOwner>[1] {
    const { kafka, store, hub, log } = this.parts
    const { groupId, runsTopic, commandsTopic, maxBatch, lingerMs, sessionTimeoutMs } = this.settings
    return { kafka, count: this.counted, admin: this.admin!, group: this.group, store, manager: this.parts.manager(), hub, groupId, runsTopic, commandsTopic, partitionOf: id => this.partitionOf(id), maxBatch, lingerMs, transactionTimeoutMs: Math.max(sessionTimeoutMs * 2, 10_000), log }
  }

  private takeUp (partition: number): void {
    this.failed.delete(partition)
    const owner = new PartitionOwner(partition, this.partitionContext(), (o, err) => this.lost(o, err))
    this.running.set(partition, owner)
    const { store } = this.parts
    store.holdPartition(partition, this.settings.self.id)
      .then(() => owner.start())
      .catch(err => this.lost(owner, err as Error))
  }

  private giveUp (partition: number, reason: string): void {
    const owner = this.running.get(partition)
    this.running.delete(partition)
    this.failed.delete(partition)
    owner?.stop(reason)
    this.parts.store.holdPartition(partition, undefined, this.settings.self.id).catch(() => undefined)
  }

  /** Drops the copies of partitions no process of this DATA_DIR has served for CLEANUP_AFTER_MS. */
  private async dropUnserved (): Promise<void> {
    const { store } = this.parts
    const now = performance.now()
    for (const { partition, holder } of store.partitions()) {
      if (holder !== undefined && this.settings.self.isAlive(holder)) {
        this.unserved.delete(partition)
        continue
      }
      const since = this.unserved.get(partition) ?? now
      this.unserved.set(partition, since)
      if (now - since < CLEANUP_AFTER_MS) continue
      this.unserved.delete(partition)
      // A holder that died without giving it up counts for nothing.
      if (holder !== undefined) await store.holdPartition(partition, undefined, holder)
      const dropped = await store.dropPartition(partition, true)
      this.log.info({ partition, runs: dropped }, 'runs partition served elsewhere for a while: its copy here was dropped')
    }
  }

  /**
   * A partition failed while this process still owns it (a write or its
   * take-up failed): it is stopped, and taken up again only after the next
   * heartbeat, which the broker answers only while this member's generation
   * stands: so a process that lost it meanwhile never fences its new owner.
   */
  private lost (owner: PartitionOwner, err: Error): void {
    if (this.running.get(owner.partition) !== owner) return
    owner.stop(err.message)
    this.running.delete(owner.partition)
    if (this.group.owns(owner.partition)) this.failed.set(owner.partition, this.group.heartbeats)
    this.log.warn({ err: err.message, partition: owner.partition }, 'runs partition failed; taken up again once the group session is confirmed')
    this.retryFailedSoon()
  }

  private retryFailedSoon (): void {
    const timer = setInterval(() => {
      if (this.failed.size === 0 || this.stopped) clearInterval(timer)
      else this.retryFailed()
    }, 500)
    timer.unref()
  }

  private retryFailed (): void {
    for (const [p, beats] of this.failed) {
      if (!this.group.owns(p)) this.failed.delete(p)
      else if (this.group.heartbeats >= beats + 2 && !this.running.has(p)) this.takeUp(p)
    }
  }

  private async on (fetched: Fetched, handle: (owner: PartitionOwner, f: Fetched) => Promise<void>): Promise<void> {
    const owner = this.running.get(fetched.partition)
    if (owner) await handle(owner, fetched)
  }
}
