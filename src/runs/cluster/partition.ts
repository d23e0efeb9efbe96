import type { Admin, Kafka, Producer } from 'kafkajs'
import { keyPartitioner } from '../../bus/index.js'
import type { Logger } from 'pino'
import type { RunHub } from '../hub.js'
import { interruptedEnd } from '../lifecycle.js'
import type { RunManager } from '../manager.js'
import type { RunStore } from '../store.js'
import { isTerminal } from '../types.js'
import { decodeCommand } from './commands.js'
import type { Fetched, RunsGroup } from './group.js'
import { decodeLogged } from './log-codec.js'
import { PartitionWriter } from './writer.js'

export interface PartitionContext {
  kafka: Kafka
  /** Counts a client's requests (`RunsCluster.counted`). */
  count: <C extends Producer>(client: C) => C
  admin: Admin
  group: RunsGroup
  store: RunStore
  manager: RunManager
  hub: RunHub
  groupId: string
  runsTopic: string
  commandsTopic: string
  partitionOf: (runId: string) => number
  maxBatch: number
  lingerMs: number
  /** A transaction open this long (a frozen owner's) is aborted by the broker. */
  transactionTimeoutMs: number
  log: Logger
}

export type PartitionState = 'starting' | 'ready' | 'stopped'

/**
 * A transaction begun right after the last one committed is refused
 * (CONCURRENT_TRANSACTIONS) until the broker has written that one's markers,
 * a few milliseconds: retried after the client's usual 200 ms, every
 * transaction of a busy partition waited that long.
 */
const TRANSACTION_RETRY = { initialRetryTime: 10, maxRetryTime: 1000, retries: 12 }

/**
 * One partition of the runs topic while this process owns it. Taking it up:
 *
 * 1. initialise the partition's transactional producer (`transactional.id`
 *    names the partition), which fences every earlier owner at the broker
 *    and settles its open transaction;
 * 2. read the partition, read_committed, from this store's offset to the
 *    end it has now (nobody else can write to it any more);
 * 3. end each run of it still in flight (failed, `interrupted`): its old
 *    owner is gone, and only this owner's fenced producer can write the end,
 *    so it is written once;
 * 4. consume the partition's commands from the offset the last owner
 *    committed with the events they made.
 *
 * Until then its runs are answered 503. Losing it (revoked, fenced, session
 * lapsed, any write failure) stops it at once: its runs are abandoned here
 * without a word on the log, and nothing of it is written again.
 */
export class PartitionOwner {
  state: PartitionState = 'starting'
  writer: PartitionWriter | undefined
  private producer: Producer | undefined
  private position = -1
  private target = 0
  private restored: (() => void) | undefined
  /** The offset after the last command handed to the manager. */
  private commandsPosition = -1
  /** Callers of `caughtUp` waiting for the commands to reach an offset. */
  private waiters: Array<{ offset: number, done: (ok: boolean) => void }> = []
  /** The end of the commands topic's partition, asked once for callers that come together. */
  private asking: Promise<number> | undefined
  private readonly log: Logger

  constructor (readonly partition: number, private readonly ctx: PartitionContext, private readonly lost: (owner: PartitionOwner, err: Error) => void) {
    this.log = ctx.log.child({ partition })
    // Nothing of it is read before it is fenced and its position known.
    ctx.group.pause('runs', partition)
    ctx.group.pause('commands', partition)
  }

  async start (): Promise<void> {
    const { kafka, store, group, groupId, partition } = { ...this.ctx, partition: this.partition }
    const startedAt = performance.now()
    this.producer = this.ctx.count(kafka.producer({ transactionalId: `${groupId}-${partition}`, maxInFlightRequests: 1, transactionTimeout: this.ctx.transactionTimeoutMs, createPartitioner: keyPartitioner, retry: TRANSACTION_RETRY }))
    await this.producer.connect()
    await (await this.producer.transaction()).abort()
    if (this.stopped) return
    const { low, high } = await this.bounds()
    let from = store.partitionOffset(partition)
    if (from < low) {
      // What this store held of the partition was removed from the log since: read it again from what is left.
      if (from > 0) await store.dropPartition(partition)
      from = low
    }
    if (from < high) await this.restore(from, high)
    if (this.stopped) return
    const ended = await this.endInFlight()
    if (this.stopped) return
    const committed = await this.committedCommands()
    if (this.stopped) return
    group.seek('commands', partition, committed)
    this.commandsPosition = committed
    this.state = 'ready'
    group.resume('commands', partition)
    this.log.info({ restoredFrom: from, to: high, interrupted: ended, ms: Math.round(performance.now() - startedAt) }, 'runs partition taken up')
  }

  /** Stops at once; its runs here are abandoned (their next owner ends them). Idempotent. */
  stop (reason: string): void {
    if (this.state === 'stopped') return
    this.state = 'stopped'
    const { manager, hub, partitionOf } = this.ctx
    const abandoned = manager.abandon(runId => partitionOf(runId) === this.partition)
    for (const runId of abandoned) hub.detach(runId)
    for (const runId of [...hub.runIds()]) if (partitionOf(runId) === this.partition) hub.detach(runId)
    this.writer?.close(new Error(`the partition was given up: ${reason}`))
    this.restored?.()
    for (const w of this.waiters) w.done(false)
    this.waiters = []
    this.producer?.disconnect().catch(() => undefined)
    if (abandoned.length > 0 || reason !== 'revoked') this.log.info({ reason, abandoned: abandoned.length }, 'runs partition given up')
  }

  get stopped (): boolean {
    return this.state === 'stopped'
  }

  /** A stretch of the runs topic read while restoring. */
  async logged (fetched: Fetched): Promise<void> {
    if (this.state !== 'starting' || this.restored === undefined) return
    const entries = []
    for (const m of fetched.messages) {
      const event = decodeLogged(m.key, m.value)
      if (event) entries.push({ runId: m.key, event })
    }
    await this.ctx.store.appendLogged(this.partition, fetched.nextOffset, entries)
    this.moved(fetched.nextOffset)
  }

  /** The runs topic's position moved (control records only, or after `logged`). */
  moved (nextOffset: number): void {
    if (nextOffset > this.position) this.position = nextOffset
    if (this.position >= this.target) this.restored?.()
  }

  /** Commands of the partition: starts and cancels for the manager; their offset commits with what they made. */
  async commands (fetched: Fetched): Promise<void> {
    if (this.state !== 'ready' || !this.writer) return
    const { manager } = this.ctx
    for (const m of fetched.messages) {
      const command = decodeCommand(m.value, m.headers['schema'])
      if (!command || this.ctx.partitionOf(command.run_id) !== this.partition) continue
      if (command.type === 'cancel') {
        if (manager.get(command.run_id)?.tenant_id === command.tenant_id) manager.cancel(command.run_id).catch(err => this.log.warn({ err, runId: command.run_id }, 'cancel failed'))
        continue
      }
      if (manager.get(command.run_id) !== undefined) continue
      manager.accept({ runId: command.run_id, createdAt: command.created_at, tenant: command.tenant_id, mode: command.mode, message: command.message, options: command.options, conversationId: command.conversation_id, ...(command.address === undefined ? {} : { address: command.address }) })
        .catch(err => this.log.warn({ err, runId: command.run_id }, 'run not started'))
    }
    this.writer.consumed(fetched.nextOffset)
    this.commandsPosition = fetched.nextOffset
    this.waiters = this.waiters.filter(w => {
      if (w.offset > this.commandsPosition) return true
      w.done(true)
      return false
    })
  }

  /**
   * Whether every command accepted before the call has reached the manager:
   * a run accepted a moment ago through another node is then known here.
   */
  async caughtUp (timeoutMs: number): Promise<boolean> {
    this.asking ??= this.bounds(this.ctx.commandsTopic).then(b => b.high).finally(() => { this.asking = undefined })
    const high = await this.asking
    if (this.state !== 'ready') return false
    if (this.commandsPosition >= high) return true
    return new Promise(resolve => {
      const timer = setTimeout(() => done(false), timeoutMs)
      const done = (ok: boolean): void => {
        clearTimeout(timer)
        this.waiters = this.waiters.filter(w => w !== waiter)
        resolve(ok)
      }
      const waiter = { offset: high, done }
      this.waiters.push(waiter)
    })
  }

  private async restore (from: number, to: number): Promise<void> {
    this.target = to
    this.position = from
    await new Promise<void>(resolve => {
      this.restored = resolve
      this.ctx.group.seek('runs', this.partition, from)
      this.ctx.group.resume('runs', this.partition)
    })
    this.restored = undefined
    this.ctx.group.pause('runs', this.partition)
  }

  /** Ends every run of the partition left in flight by its last owner, through this owner's writer. */
  private async endInFlight (): Promise<number> {
    const { store } = this.ctx
    this.writer = new PartitionWriter({
      partition: this.partition,
      runsTopic: this.ctx.runsTopic,
      commandsTopic: this.ctx.commandsTopic,
      groupId: this.ctx.groupId,
      producer: this.producer!,
      store,
      maxBatch: this.ctx.maxBatch,
      lingerMs: this.ctx.lingerMs,
      held: () => this.ctx.group.held(),
      lost: err => this.lost(this, err),
      log: this.log
    })
    const ends: Array<Promise<boolean>> = []
    for (const runId of [...store.inFlightOf(this.partition)]) {
      const stale = store.get(runId)
      if (stale && !isTerminal(stale.status)) ends.push(this.writer.append(runId, interruptedEnd(stale)))
    }
    await Promise.all(ends)
    return ends.length
  }

  private async committedCommands (): Promise<number> {
    const { admin, groupId, commandsTopic } = this.ctx
    const [topic] = await admin.fetchOffsets({ groupId, topics: [commandsTopic] })
    const committed = Number(topic?.partitions.find(p => p.partition === this.partition)?.offset ?? -1)
    return committed >= 0 ? committed : (await this.bounds(commandsTopic)).low
  }

  private async bounds (topic = this.ctx.runsTopic): Promise<{ low: number, high: number }> {
    const offsets = await this.ctx.admin.fetchTopicOffsets(topic)
    const mine = offsets.find(o => o.partition === this.partition)
    return { low: Number(mine?.low ?? 0), high: Number(mine?.high ?? 0) }
  }
}
