import type { Logger } from 'pino'
import type { FollowableBus, StoredMessage, Subscription } from '../bus/index.js'
import type { RunHub } from './hub.js'
import type { RunManager } from './manager.js'
import type { RunOutbox } from './outbox.js'
import type { RunStore } from './store.js'
import type { RunRecord } from './types.js'

/** How often runs with subscribers here and an owner elsewhere are read for new events. */
const FOLLOW_POLL_MS = 50
/** How often runs of processes that died are looked for. */
const CLAIM_MS = 2000
/** Longest wait of a cancel for the owner's end of the run to reach this process. */
const CANCEL_WAIT_MS = 5000
/** A cancel request is sent again this often while it waits (a node whose control consumer was joining missed it). */
const CANCEL_RESEND_MS = 1000
const END_POLL_MS = 50
const CONTROL_SCHEMA = 'run-control@1'

export interface RemoteOptions {
  store: RunStore
  hub: RunHub
  manager: RunManager
  outbox: RunOutbox
  bus: FollowableBus
  controlTopic: string
  /** Consumer group of this process on the control topic (its own: every process must see every request). */
  controlGroup: string
  log: Logger
}

/**
 * Runs owned by another process: one sharing DATA_DIR (WORKERS > 1) or, in
 * a cluster, another node whose runs this node's cache holds.
 *
 * - Live events: a run streamed here but executed elsewhere has its new
 *   events read from the store every FOLLOW_POLL_MS (written there by its
 *   owner on a shared DATA_DIR, or by the replica from TOPIC_RUNS) and handed
 *   to the hub, as the owner's manager does for its own runs.
 * - Cancel: a request on the control topic; every process follows it, and the
 *   one executing the run cancels it. The requester answers once the run's end
 *   is in its store.
 * - Processes that died: their runs are claimed (`RunOutbox.claim`), those in
 *   flight ended as interrupted, and their events published.
 */
export class RemoteRuns {
  private readonly cursors = new Map<string, number>()
  private control: Subscription | undefined
  private timers: NodeJS.Timeout[] = []
  /** The takeover under way, which a stop waits for. */
  private claiming: Promise<void> | undefined

  constructor (private readonly options: RemoteOptions) {}

  start (): void {
    const { bus, controlTopic, controlGroup } = this.options
    this.control = bus.subscribe(controlTopic, { group: controlGroup, fromStart: false }, messages => this.onControl(messages))
    this.timers.push(setInterval(() => this.follow(), FOLLOW_POLL_MS).unref())
    this.timers.push(setInterval(() => { this.claiming ??= this.claim().finally(() => { this.claiming = undefined }) }, CLAIM_MS).unref())
  }

  /**
   * Waits for a takeover under way: its runs' ends are visible (and
   * streamed) once LMDB's write thread commits them, before the outbox has
   * them, and the outbox stops with what it has, so stopping in between
   * would leave them unpublished until the next process claims them.
   */
  async stop (): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    await this.claiming
    await this.control?.stop()
  }

  /**
   * Call just before subscribing to the run on the hub: live events of a run
   * executed elsewhere are handed to the hub from its current end on (the
   * subscriber's replay reads everything up to where it switches to them).
   */
  watch (runId: string): void {
    if (!this.options.manager.isActive(runId) && !this.cursors.has(runId)) this.cursors.set(runId, this.options.store.logEnd(runId).id)
  }

  /** Whether more events of the run may come (its end is not stored yet), wherever it runs. */
  isActive (runId: string): boolean {
    return this.options.manager.isActive(runId) || !this.options.store.logEnd(runId).terminal
  }

  /**
   * Asks whoever executes the run to cancel it, and resolves with its record
   * once its end is in the store (cancelled, or another end that came
   * first), or undefined when it did not come within CANCEL_WAIT_MS.
   */
  async cancel (record: RunRecord): Promise<RunRecord | undefined> {
    const { store } = this.options
    const deadline = performance.now() + CANCEL_WAIT_MS
    let sentAt = -Infinity
    while (performance.now() < deadline) {
      if (store.logEnd(record.run_id).terminal) return store.get(record.run_id)
      if (performance.now() - sentAt >= CANCEL_RESEND_MS) {
        sentAt = performance.now()
        await this.requestCancel(record)
      }
      await new Promise(resolve => setTimeout(resolve, END_POLL_MS))
    }
    return store.logEnd(record.run_id).terminal ? store.get(record.run_id) : undefined
  }

  private async requestCancel (record: RunRecord): Promise<void> {
    const value = JSON.stringify({ type: 'cancel', run_id: record.run_id, tenant_id: record.tenant_id, requested_at: new Date().toISOString() })
    await this.options.bus.publish(this.options.controlTopic, [{ key: record.run_id, value, headers: { schema: CONTROL_SCHEMA } }])
      .catch(err => this.options.log.warn({ err: (err as Error).message, runId: record.run_id }, 'cancel request not sent'))
  }

  private async onControl (messages: StoredMessage[]): Promise<void> {
    for (const m of messages) {
      if (m.headers['schema'] !== CONTROL_SCHEMA || !this.options.manager.isActive(m.key)) continue
      let request: { type?: unknown, tenant_id?: unknown }
      try {
        request = JSON.parse(String(m.value)) as typeof request
      } catch {
        continue
      }
      const run = this.options.manager.get(m.key)
      if (request.type !== 'cancel' || run?.tenant_id !== request.tenant_id) continue
      this.options.log.info({ runId: m.key }, 'run cancelled at the request of another process')
      await this.options.manager.cancel(m.key)
    }
  }

  /** Hands the hub the new events of runs subscribed to here and executed elsewhere. */
  private follow (): void {
    const { hub, store, manager } = this.options
    for (const runId of this.cursors.keys()) if (!hub.has(runId)) this.cursors.delete(runId)
    for (const runId of hub.runIds()) {
      if (manager.isActive(runId)) continue
      let cursor = this.cursors.get(runId) ?? 0
      for (const event of store.eventsAfter(runId, cursor)) {
        hub.publish(runId, event)
        cursor = event.id
      }
      this.cursors.set(runId, cursor)
    }
  }

  /** Runs of processes that died: ends those in flight (interrupted), then publishes what they left. */
  private async claim (): Promise<void> {
    try {
      const { outbox, manager, log } = this.options
      const claimed = await outbox.claim()
      if (claimed.length === 0) return
      const interrupted = await manager.recover(claimed)
      log.warn({ runs: claimed.length, interrupted }, 'runs of a process that stopped were taken over; those in flight were marked failed (interrupted)')
      outbox.adopt(claimed)
    } catch (err) {
      this.options.log.error({ err }, 'runs of stopped processes not taken over')
    }
  }
}
