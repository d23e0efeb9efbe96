import { LocalBus, type FollowableBus } from '../bus/index.js'
import type { Config } from '../config/index.js'
import { refusal } from '../errors.js'
import type { Logger } from 'pino'
import type { Owner, StateStore } from '../state/index.js'
import type { RunHub } from './hub.js'
import type { EventSink, RunManager } from './manager.js'
import { RunOutbox } from './outbox.js'
import { RemoteRuns } from './remote.js'
import type { RunStore } from './store.js'
import { isTerminal, type RunRecord } from './types.js'
import type { RunFeed } from './watch.js'

export interface SingleNodeParts {
  config: Config
  state: StateStore
  bus: FollowableBus
  store: RunStore
  hub: RunHub
  feed: RunFeed
  self: Owner
  /** The process's: each part logs under a `component` of its own. */
  log: Logger
}

/**
 * Runs on one node (`BUS=local`, or Kafka without a shared store): LMDB is
 * the commit point; the run-event log is the outbox of TOPIC_RUNS; the
 * processes sharing DATA_DIR (`WORKERS` > 1) see each other's runs in it,
 * cancel through its local log, and take over a dead one's runs
 * (`RemoteRuns`).
 */
export class SingleNodeRuns {
  readonly outbox: RunOutbox
  private remote: RemoteRuns | undefined

  constructor (private readonly parts: SingleNodeParts) {
    const { config, state, bus, store, log, self } = parts
    this.outbox = new RunOutbox(state, store, {
      maxBatch: config.harnessPublishBatchMax,
      lingerMs: config.harnessPublishLingerMs,
      publish: messages => bus.publish(config.topicRuns, messages),
      probe: () => bus.probe(),
      log: log.child({ component: 'run-outbox' }),
      owner: self
    })
  }

  /** Where committed events go: the relay, and the tenant feed of `/runs:watch`. */
  sink (): EventSink {
    const { outbox } = this
    const { feed } = this.parts
    return {
      track (runId, tenantId, createdAt) { outbox.track(runId, tenantId, createdAt) },
      add (runId, event, terminal) {
        outbox.add(runId, event, terminal)
        feed.publish(event)
      }
    }
  }

  /** Ends the runs a stopped process left in flight (interrupted) and relays what is unpublished, then follows the other processes. */
  async start (manager: RunManager): Promise<void> {
    const { config, state, bus, store, hub, log, self } = this.parts
    const claimed = await this.outbox.claim()
    const interrupted = await manager.recover(claimed)
    if (interrupted > 0) log.warn({ interrupted, component: 'harness' }, 'runs in flight at the last stop were marked failed (interrupted)')
    this.outbox.start(claimed)
    this.remote = new RemoteRuns({
      store,
      hub,
      manager,
      outbox: this.outbox,
      // The processes that share runs share DATA_DIR, so its LMDB carries their requests (whatever BUS is).
      bus: bus.kind === 'local' ? bus : new LocalBus(state),
      controlTopic: config.topicRunsControl,
      controlGroup: `${config.kafkaClientId}-control-${self.id}`,
      log: log.child({ component: 'runs' })
    })
    this.remote.start()
  }

  async stop (manager: RunManager): Promise<void> {
    await this.remote?.stop()
    await manager.drain()
    await this.outbox.stop(this.parts.config.shutdownTimeoutMs)
  }

  /** Retention keeps a run whose events are not all published. */
  holds (runId: string): boolean {
    return this.outbox.holds(runId)
  }

  /** Call before following a run: one executed by another process is read from the log as it grows. */
  follow (runId: string): void {
    this.remote?.watch(runId)
  }

  isActive (runId: string): boolean {
    return this.remote?.isActive(runId) ?? false
  }

  /**
   * A run this process does not execute: its owner (another process on
   * DATA_DIR) is asked to cancel it, and the answer waits until its end is
   * in the store. 503 when it did not come in time: the request stands, and
   * a retry answers once it has.
   */
  async cancelElsewhere (manager: RunManager, record: RunRecord): Promise<RunRecord> {
    const local = manager.get(record.run_id)
    if (local && isTerminal(local.status)) return local
    const ended = await this.remote?.cancel(record)
    if (!ended) throw refusal('run_cancel_pending', { headers: { 'retry-after': '1' } })
    return ended
  }
}
