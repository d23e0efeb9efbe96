import type { Logger } from 'pino'
import { Gauge, type Registry } from 'prom-client'
import { LocalBus, type FollowableBus } from '../bus/index.js'
import type { Config } from '../config/index.js'
import { type Reply, type RequestContext, type Route } from '../http/index.js'
import { GatewayError } from '../errors.js'
import type { Owner, StateStore } from '../state/index.js'
import { isStorageId } from '../validation/index.js'
import { followRun } from './follow.js'
import { HarnessGate } from './gate.js'
import { RunHub } from './hub.js'
import { isRunId } from './ids.js'
import { parseListQuery, RunIndex } from './list.js'
import { RunManager, type EventSink } from './manager.js'
import { builtInModes, DEFAULT_MODE } from './modes/index.js'
import { RunOutbox } from './outbox.js'
import { RemoteRuns } from './remote.js'
import { RunReplica } from './replica.js'
import { parseLastEventId, parseRunRequest, requireJsonBody } from './request.js'
import { SseStream } from './sse.js'
import { RunStore } from './store.js'
import { isTerminal, type RunEvent, type RunRecord } from './types.js'
import { RunFeed } from './watch.js'

const RETENTION_SWEEP_MS = 60 * 60 * 1000
const KEY_RETRY_MIN_MS = 250
const KEY_RETRY_MAX_MS = 10_000
/** Shorter than readiness's own limit, so a bus that does not answer is reported with what waits for it. */
const BUS_PROBE_MS = 1500
/**
 * How long a read of a run this node does not have waits for the log of runs
 * to be read to its end; and how long, in a cluster, a start's answer waits
 * for the run's first event to be on that log.
 */
const MISS_WAIT_MS = 2000

/** This process among those sharing DATA_DIR (src/state/incarnation.ts). */
export interface HarnessProcess extends Owner {
  knows(id: string): boolean
}

/** In a cluster (BUS=kafka, STORAGE=s3): whether another node's incarnation is alive (its heartbeat). */
export interface HarnessCluster {
  isAlive(id: string): Promise<boolean>
}

/**
 * The run harness on HARNESS_PORT: the gate, the run manager, SSE, the bus
 * relay, recovery and retention; runs of the other processes on DATA_DIR
 * (RemoteRuns) and, in a cluster, of the other nodes (RunReplica).
 */
export class HarnessService {
  private readonly manager: RunManager
  private readonly hub = new RunHub()
  private readonly store: RunStore
  private readonly outbox: RunOutbox
  private readonly index: RunIndex
  private readonly feed = new RunFeed()
  private readonly gate: HarnessGate
  private readonly remote: RemoteRuns
  private readonly replica: RunReplica | undefined
  private keysLoaded: boolean
  private timers: NodeJS.Timeout[] = []

  private readonly log: Logger

  /** `log` is the process's: the service's own lines are `component: harness`, its parts' their own (one `component` per line). */
  constructor (private readonly config: Config, state: StateStore, private readonly bus: FollowableBus, log: Logger, self: HarnessProcess, registry?: Registry, cluster?: HarnessCluster) {
    this.log = log.child({ component: 'harness' })
    this.store = new RunStore(state)
    this.gate = new HarnessGate({ enabled: config.svcHarnessAuthEnabled, issuer: config.idpIssuer, jwksUrl: config.idpJwksUrl, audience: config.idpRs256Audience, tenantAssertionSecret: config.harnessTenantAssertionSecret })
    this.keysLoaded = !config.svcHarnessAuthEnabled
    this.outbox = new RunOutbox(state, this.store, {
      maxBatch: config.harnessPublishBatchMax,
      lingerMs: config.harnessPublishLingerMs,
      publish: messages => bus.publish(config.topicRuns, messages),
      probe: () => bus.probe(),
      log: log.child({ component: 'run-outbox' }),
      owner: self
    })
    this.index = new RunIndex(state)
    const modes = builtInModes({ url: config.harnessLlmUrl, model: config.harnessLlmModel, apiKey: config.harnessLlmApiKey })
    this.manager = new RunManager(this.store, this.hub, modes, this.sink(), log.child({ component: 'runs' }), { total: config.harnessMaxRunsInFlight, perTenant: config.harnessMaxRunsInFlightPerTenant })
    this.remote = new RemoteRuns({
      store: this.store,
      hub: this.hub,
      manager: this.manager,
      outbox: this.outbox,
      // Outside a cluster the processes that share runs share DATA_DIR, so its LMDB carries their requests (whatever BUS is).
      bus: cluster || bus.kind === 'local' ? bus : new LocalBus(state),
      controlTopic: config.topicRunsControl,
      controlGroup: `${config.kafkaClientId}-control-${self.id}`,
      log: log.child({ component: 'runs' })
    })
    this.replica = cluster && new RunReplica({
      state,
      store: this.store,
      bus,
      topic: config.topicRuns,
      clientId: config.kafkaClientId,
      self: self.id,
      isLocal: id => self.knows(id),
      isAlive: id => cluster.isAlive(id),
      // Runs of other nodes join the tenant's list and its watch as they are copied in.
      stored: (runId, event) => this.copied(runId, event),
      log: log.child({ component: 'run-replica' })
    })
    if (registry) {
      const outbox = this.outbox
      new Gauge({ name: 'harness_run_events_waiting', help: 'Run events stored but not yet acknowledged by the bus', registers: [registry], collect () { this.set(outbox.waiting) } })
      new Gauge({ name: 'harness_run_events_dropped', help: 'Run events skipped because the bus refused them while it took others', registers: [registry], collect () { this.set(outbox.dropped) } })
    }
  }

  async start (): Promise<void> {
    const claimed = await this.outbox.claim()
    const interrupted = await this.manager.recover(claimed)
    if (interrupted > 0) this.log.warn({ interrupted }, 'runs in flight at the last stop were marked failed (interrupted)')
    this.outbox.start(claimed)
    this.remote.start()
    await this.replica?.start()
    const indexed = await this.index.build(this.storedRuns())
    if (indexed > 0) this.log.info({ indexed }, 'runs stored before the tenant index were indexed')
    await this.sweep()
    this.timers.push(setInterval(() => { this.sweep().catch(err => this.log.error({ err }, 'run retention sweep failed')) }, RETENTION_SWEEP_MS).unref())
    if (!this.keysLoaded) this.loadKeys()
  }

  async stop (): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    await this.remote.stop()
    await this.replica?.stop()
    await this.manager.drain()
    await this.outbox.stop(this.config.shutdownTimeoutMs)
  }

  /** Ends the watchers of `/runs:watch` (first thing at shutdown: a watch never ends by itself). */
  closeWatchers (): void {
    this.feed.close()
  }

  /** Readiness: the key set was fetched (when auth is on). */
  probe (): void {
    if (!this.keysLoaded) throw new Error(`key set not fetched yet from ${this.config.idpJwksUrl}`)
  }

  /** Readiness of the bus for run events: its probe, and how many wait for it. */
  async busState (): Promise<Record<string, unknown>> {
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        this.bus.probe(),
        new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer from the bus in ${BUS_PROBE_MS} ms`)), BUS_PROBE_MS) })
      ])
    } catch (err) {
      throw new Error(`${(err as Error).message} (${this.outbox.waiting} run events waiting)`)
    } finally {
      clearTimeout(timer)
    }
    return { run_events_waiting: this.outbox.waiting, ...(this.outbox.lastError === undefined ? {} : { last_error: this.outbox.lastError }) }
  }

  routes (): Route[] {
    const common = { errors: 'harness' as const }
    return [
      { ...common, method: 'POST', path: '/runs', body: 'json', authorize: ctx => this.gate.tenant(ctx.headers), handler: (ctx, tenant: string) => this.runSync(ctx, tenant) },
      { ...common, method: 'GET', path: '/runs', handler: ctx => this.list(ctx) },
      { ...common, method: 'GET', path: '/runs:watch', handler: ctx => this.watch(ctx) },
      { ...common, method: 'POST', path: '/runs:start', body: 'json', authorize: ctx => this.gate.tenant(ctx.headers), handler: (ctx, tenant: string) => this.runAsync(ctx, tenant) },
      { ...common, method: 'GET', path: '/runs/{id}', handler: ctx => this.getRun(ctx) },
      { ...common, method: 'GET', path: '/runs/{id}/stream', handler: ctx => this.stream(ctx) },
      { ...common, method: 'POST', path: '/runs/{id}/cancel', handler: ctx => this.cancel(ctx) },
      { ...common, method: 'GET', path: '/skills', handler: ctx => this.skills(ctx) }
    ]
  }

  /** Fetches the key set, retrying with backoff: the IdP may start after us (or be this process). */
  private loadKeys (delay = KEY_RETRY_MIN_MS): void {
    this.gate.loadKeys().then(() => {
      this.keysLoaded = true
      this.log.info({ jwks: this.config.idpJwksUrl }, 'harness key set fetched')
    }, err => {
      this.log.warn({ err: (err as Error).message, jwks: this.config.idpJwksUrl, retryInMs: delay }, 'harness key set not fetched; retrying')
      this.timers.push(setTimeout(() => this.loadKeys(Math.min(delay * 2, KEY_RETRY_MAX_MS)), delay).unref())
    })
  }

  private async sweep (): Promise<void> {
    const removed = await this.store.removeEndedBefore(Date.now() - this.config.harnessRetentionS * 1000, runId => this.outbox.holds(runId))
    if (removed > 0) this.log.info({ removed }, 'terminal runs past retention removed')
    const ids = new Set(this.store.runIdsFrom())
    await this.index.prune(id => ids.has(id))
  }

  /**
   * Where committed events go: the relay, and the tenant feed of `/runs:watch`.
   * A run is added to its tenant's index when it is created, in the same
   * commit as its first event.
   */
  private sink (): EventSink {
    const { outbox, index, feed } = this
    return {
      track (runId, tenantId, createdAt) {
        index.add(tenantId, runId)
        outbox.track(runId, tenantId, createdAt)
      },
      add (runId, event, terminal) {
        outbox.add(runId, event, terminal)
        feed.publish(event)
      }
    }
  }

  /** An event of another node's run, copied from the log: its run joins the list at its first event, its transitions the watch. */
  private copied (runId: string, event: RunEvent): void {
    if (event.id === 1 && event.record !== undefined) {
      const tenant = (JSON.parse(event.record) as { tenant_id?: unknown }).tenant_id
      if (typeof tenant === 'string') this.index.add(tenant, runId)
    }
    this.feed.publish(event)
  }

  private * storedRuns (): Generator<{ tenant: string, runId: string }> {
    for (const runId of this.store.runIdsFrom()) {
      const record = this.store.get(runId)
      if (record) yield { tenant: record.tenant_id, runId }
    }
  }

  /** Starts the run the request asks for. A bad request throws before anything starts. */
  private begin (ctx: RequestContext, tenant: string): Promise<RunRecord> {
    requireJsonBody(ctx.headers['content-type'])
    const request = parseRunRequest(ctx.json(), m => this.manager.hasMode(m), DEFAULT_MODE)
    const started = this.manager.start({ tenant, ...request })
    if (!this.replica) return started
    // Read-your-writes across nodes: the answer waits for the run's first event to be on the log the other nodes read (see `owned`).
    return started.then(record => this.outbox.published(record.run_id, 1, MISS_WAIT_MS).then(() => record))
  }

  private async runSync (ctx: RequestContext, tenant: string): Promise<Reply> {
    const started = await this.begin(ctx, tenant)
    const record = (await this.manager.waitForEnd(started.run_id, this.config.harnessSyncTimeoutMs))!
    return this.withEvents(isTerminal(record.status) ? 200 : 202, record)
  }

  private runAsync (ctx: RequestContext, tenant: string): Promise<Reply> {
    return this.begin(ctx, tenant).then(accepted)
  }

  /**
   * The run, if it exists and belongs to the caller's tenant (403 otherwise,
   * in flight or terminal). An id that could not be a run's (not a storage
   * identifier: too long for an LMDB key, say) is as unknown as any other.
   */
  private async owned (ctx: RequestContext): Promise<RunRecord> {
    const tenant = await this.gate.tenant(ctx.headers)
    const id = ctx.params['id']!
    let record = isStorageId(id) ? this.manager.get(id) : undefined
    // Read-your-writes across nodes: a run started on another node a moment ago may not be in this cache yet.
    if (!record && this.replica && isRunId(id) && await this.replica.caughtUp(MISS_WAIT_MS)) record = this.manager.get(id)
    if (!record) throw new GatewayError('not_found', 'run_not_found')
    if (record.tenant_id !== tenant) throw new GatewayError('forbidden', 'cross_tenant_replay:run')
    return record
  }

  /** `GET /runs`: the tenant's runs, newest first, filtered and paged (`list.ts`); records without their events. */
  private async list (ctx: RequestContext): Promise<Reply> {
    const tenant = await this.gate.tenant(ctx.headers)
    const query = parseListQuery(ctx.query, m => this.manager.hasMode(m))
    return { status: 200, body: this.index.page(tenant, query, id => this.manager.get(id)) }
  }

  /** `GET /runs:watch`: the tenant's run transitions as server-sent events (`watch.ts`). */
  private async watch (ctx: RequestContext): Promise<undefined> {
    const tenant = await this.gate.tenant(ctx.headers)
    await this.feed.watch(ctx, tenant, ctx.headers['last-event-id'], this.config.harnessSseBuffer, this.config.harnessHeartbeatMs)
    return undefined
  }

  private async getRun (ctx: RequestContext): Promise<Reply> {
    return this.withEvents(200, await this.owned(ctx))
  }

  private async cancel (ctx: RequestContext): Promise<Reply> {
    const record = await this.owned(ctx)
    if (isTerminal(record.status)) throw new GatewayError('conflict', `run_not_in_flight:${record.status}`)
    const cancelled = await this.manager.cancel(record.run_id) ?? await this.cancelElsewhere(record)
    if (cancelled.status !== 'cancelled') throw new GatewayError('conflict', `run_not_in_flight:${cancelled.status}`)
    return this.withEvents(200, cancelled)
  }

  /**
   * A run this process does not execute: its owner (another process on
   * DATA_DIR, another node) is asked to cancel it, and the answer waits until
   * its end is in this process's store. 503 when it did not come in time: the
   * request stands, and a retry answers once it has.
   */
  private async cancelElsewhere (record: RunRecord): Promise<RunRecord> {
    const local = this.manager.get(record.run_id)
    if (local && isTerminal(local.status)) return local
    const ended = await this.remote.cancel(record)
    if (!ended) throw new GatewayError('overloaded', 'run_cancel_pending', { headers: { 'retry-after': '1' } })
    return ended
  }

  /** No skills are installed: the origin client's `skills.list()` gets the empty list, for any `tenant` it names. */
  private async skills (ctx: RequestContext): Promise<Reply> {
    await this.gate.tenant(ctx.headers)
    return { status: 200, body: [] }
  }

  /**
   * The record with `events`, the run's stored events in order, as the
   * origin's record has them. They are spliced in as the JSON they are
   * stored as, not parsed and serialised again.
   */
  private withEvents (status: number, record: RunRecord): Reply {
    const events = Array.from(this.store.eventsAfter(record.run_id), e => e.json).join(',')
    const json = JSON.stringify(record)
    return { status, body: `${json.slice(0, -1)},"events":[${events}]}`, headers: { 'content-type': 'application/json' } }
  }

  /** Replays stored events after Last-Event-ID, then follows live ones (`followRun`). */
  private async stream (ctx: RequestContext): Promise<undefined> {
    const record = await this.owned(ctx)
    const after = parseLastEventId(ctx.headers['last-event-id'])
    if (!ctx.live) return undefined
    const sse = new SseStream(ctx, record.run_id, this.config.harnessSseBuffer, this.config.harnessHeartbeatMs, after)
    this.remote.watch(record.run_id)
    followRun(sse, record.run_id, after, { store: this.store, hub: this.hub, isActive: id => this.remote.isActive(id) }).catch(err => {
      this.log.error({ err, runId: record.run_id }, 'run stream failed')
      sse.end()
    })
    return undefined
  }
}

/** `POST /runs:start`'s 202: the run's id, its status and where to follow it. */
function accepted (record: RunRecord): Reply {
  const self = `/runs/${record.run_id}`
  return { status: 202, body: { run_id: record.run_id, status: record.status, links: { self, stream: `${self}/stream`, cancel: `${self}/cancel` } } }
}
