import { randomUUID } from 'node:crypto'
import type { Database } from 'lmdb'
import type { Logger } from 'pino'
import type { FollowableBus, StoredMessage, Subscription } from '../bus/index.js'
import type { StateStore } from '../state/index.js'
import { TERMINAL_EVENT_TYPES } from './catalogue.js'
import { decodeEvent } from './events.js'
import { interruptedEnd } from './manager.js'
import type { LogEnd, RunStore } from './store.js'
import { isTerminal, type RunEvent } from './types.js'

/** How often runs whose owner may have died are looked at. */
const SWEEP_MS = 2000
/** Before ending another node's runs, the log is read to its end (so their last events are known), waiting at most this. */
const SWEEP_CATCH_UP_MS = 5000
const SCHEMA = 'run-event@2'
const GROUP = 'group'

export interface ReplicaOptions {
  state: StateStore
  store: RunStore
  bus: FollowableBus
  topic: string
  /** Prefix of this DATA_DIR's consumer group (KAFKA_CLIENT_ID). */
  clientId: string
  /** This process's incarnation. */
  self: string
  /** Whether an incarnation runs on this DATA_DIR: its runs are this node's own (RemoteRuns claims them). */
  isLocal: (id: string) => boolean
  /** Whether another node's incarnation is alive (its heartbeat). */
  isAlive: (id: string) => Promise<boolean>
  /** Told of each event copied in, once it is stored. */
  stored?: (runId: string, event: RunEvent) => void
  log: Logger
}

/**
 * This node's cache of every node's runs, materialised from TOPIC_RUNS (the
 * log): a consumer group per DATA_DIR reads it from where this cache is (a
 * new DATA_DIR from the earliest offset) and stores each event it does not
 * have, through RunStore, as the owner stored it: only the next event of a
 * run (`seq` one past the newest it holds), and nothing after a run's end.
 * Every node applies the same log in the same order, so all converge, and
 * the first end of a run in the log is its end everywhere.
 *
 * A run in flight is followed (`run-followed`, run_id → owner incarnation,
 * from the `owner` header); when its owner's heartbeat is stale, this node
 * publishes the run's end (failed, interrupted) once it has read the log to
 * its end. Every node that notices does the same; the first end wins.
 */
export class RunReplica {
  private readonly followed: Database<string, string>
  private readonly meta: Database<string, string>
  private subscription: Subscription | undefined
  private timer: NodeJS.Timeout | undefined
  private sweeping = false
  private catchingUp: Promise<boolean> | undefined

  constructor (private readonly options: ReplicaOptions) {
    this.followed = options.state.openDB<string, string>({ name: 'run-followed', encoding: 'string' })
    this.meta = options.state.openDB<string, string>({ name: 'run-replica', encoding: 'string' })
  }

  async start (): Promise<void> {
    const { bus, topic, state, clientId } = this.options
    // Every process of this DATA_DIR shares the group (they share the cache): the first to start names it.
    const candidate = `${clientId}-runs-${randomUUID()}`
    await state.transaction(() => { if (this.meta.get(GROUP) === undefined) this.meta.put(GROUP, candidate) })
    const group = this.meta.get(GROUP)!
    this.subscription = bus.subscribe(topic, { group, fromStart: true }, messages => this.materialise(messages))
    this.timer = setInterval(() => { void this.sweep() }, SWEEP_MS).unref()
    this.options.log.info({ topic, group }, 'following the runs of every node')
  }

  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.subscription?.stop()
  }

  /**
   * Resolves once this cache holds everything the log held when it was
   * called (true), or after `timeoutMs` (false). Concurrent callers share one
   * look at the log.
   */
  caughtUp (timeoutMs: number): Promise<boolean> {
    if (!this.subscription) return Promise.resolve(false)
    this.catchingUp ??= this.subscription.caughtUp(timeoutMs).finally(() => { this.catchingUp = undefined })
    return this.catchingUp
  }

  private async materialise (messages: StoredMessage[]): Promise<void> {
    const { store, isLocal } = this.options
    const ends = new Map<string, LogEnd>()
    const writes: Array<Promise<boolean>> = []
    for (const m of messages) {
      const runId = m.key
      const parsed = parse(String(m.value))
      if (!parsed || parsed.runId !== runId) continue
      const end = ends.get(runId) ?? store.logEnd(runId)
      if (end.terminal || parsed.event.id !== end.id + 1) continue
      const terminal = TERMINAL_EVENT_TYPES.has(parsed.event.type)
      ends.set(runId, { id: parsed.event.id, terminal })
      writes.push(store.append(runId, parsed.event).then(added => {
        if (added) this.options.stored?.(runId, parsed.event)
        return added
      }))
      const owner = m.headers['owner']
      if (terminal) {
        if (this.followed.get(runId) !== undefined) this.followed.remove(runId)
      } else if (owner !== undefined && !isLocal(owner) && this.followed.get(runId) !== owner) {
        this.followed.put(runId, owner)
      }
    }
    await Promise.all(writes)
  }

  /** Ends the runs in flight of nodes whose heartbeat is stale. */
  private async sweep (): Promise<void> {
    if (this.sweeping) return
    this.sweeping = true
    try {
      const byOwner = new Map<string, string[]>()
      for (const { key, value } of this.followed.getRange()) byOwner.set(value, [...(byOwner.get(value) ?? []), key])
      for (const [owner, runIds] of byOwner) {
        if (this.options.isLocal(owner) || await this.options.isAlive(owner)) continue
        if (!await this.caughtUp(SWEEP_CATCH_UP_MS)) continue
        await this.end(owner, runIds)
      }
    } catch (err) {
      this.options.log.warn({ err: (err as Error).message }, 'runs of stopped nodes not checked')
    } finally {
      this.sweeping = false
    }
  }

  private async end (owner: string, runIds: string[]): Promise<void> {
    const { store, bus, topic, self, log } = this.options
    const messages = []
    for (const runId of runIds) {
      const record = store.get(runId)
      if (!record || isTerminal(record.status) || store.logEnd(runId).terminal) {
        await this.followed.remove(runId)
        continue
      }
      messages.push({ key: runId, value: interruptedEnd(record).json, headers: { 'client-id': record.tenant_id, schema: SCHEMA, owner: self } })
    }
    if (messages.length === 0) return
    await bus.publish(topic, messages)
    log.warn({ owner, runs: messages.length }, 'runs of a node that stopped were ended (failed, interrupted)')
  }
}

/** A bus message's event, as this harness encodes it, with the record a lifecycle event carries. */
function parse (text: string): { runId: string, event: RunEvent } | undefined {
  try {
    const event = decodeEvent(text)
    const object = JSON.parse(text) as { seq?: unknown, run_id?: unknown, data?: { run?: unknown } }
    if (object.seq !== event.id || typeof object.run_id !== 'string') return undefined
    if (object.data?.run !== undefined) event.record = JSON.stringify(object.data.run)
    return { runId: object.run_id, event }
  } catch {
    return undefined
  }
}
