import { statfsSync } from 'node:fs'
import type { Kafka } from 'kafkajs'
import type { Logger } from 'pino'
import type { Registry } from 'prom-client'
import type { Revocation } from '../auth/index.js'
import type { FollowableBus } from '../bus/index.js'
import type { Config } from '../config/index.js'
import { type Reply, type RequestContext, type Route } from '../http/index.js'
import { HARNESS_ROUTES, routeKey, type HarnessRouteKey } from '../harness-api/index.js'
import { refusal } from '../errors.js'
import type { Owner, StateStore } from '../state/index.js'
import { isStorageId } from '../validation/index.js'
import { ClusterRequests } from './cluster/requests.js'
import { RunsCluster } from './cluster/cluster.js'
import { followRun } from './follow.js'
import { HarnessGate } from './gate.js'
import { RunHub } from './hub.js'
import { parseListQuery, RunIndex } from './list.js'
import { RunManager, type EventSink } from './manager.js'
import { RunMetrics } from './metrics.js'
import { builtInModes, DEFAULT_MODE } from './modes/index.js'
import { parseEventsAfter, parseLastEventId, parseRunRequest, requireJsonBody, type RunRequest } from './request.js'
import { SingleNodeRuns } from './single.js'
import { SseStream } from './sse.js'
import { ReplayBudget } from './replay-budget.js'
import { ReadRate } from './read-rate.js'
import { StreamBudget } from './stream-budget.js'
import { TenantStorage } from './tenant-storage.js'
import { RunStore } from './store.js'
import { isTerminal, type RunRecord } from './types.js'
import { RunFeed } from './watch.js'

const RETENTION_SWEEP_MS = 60 * 60 * 1000
const KEY_RETRY_MIN_MS = 250
const KEY_RETRY_MAX_MS = 10_000
/** Shorter than readiness's own limit, so a bus that does not answer is reported with what waits for it. */
const BUS_PROBE_MS = 1500

/** This process among those sharing DATA_DIR (src/state/incarnation.ts). */
export interface HarnessProcess extends Owner {
  knows(id: string): boolean
}

/** In a cluster (BUS=kafka, STORAGE=s3): the Kafka client for the runs group, and where the other members reach this process. */
export interface HarnessCluster {
  kafka: Kafka
  /** This process's peer listener as the other members reach it (`http://CLUSTER_ADVERTISED_HOST:port`). */
  url: string
}

/**
 * The run harness on HARNESS_PORT: the gate, the run manager, SSE,
 * retention, and where runs are committed: on one node, LMDB and the
 * outbox of TOPIC_RUNS (`SingleNodeRuns`); in a cluster, the runs topic
 * through the owner of each run's partition (`RunsCluster`), reached from
 * any process (`ClusterRequests`).
 */
export class HarnessService {
  private readonly manager: RunManager
  private readonly hub = new RunHub()
  private readonly store: RunStore
  private readonly index: RunIndex
  private readonly feed = new RunFeed()
  private readonly gate: HarnessGate
  private readonly streams: StreamBudget
  private readonly replays: ReplayBudget
  private readonly reads: ReadRate
  private readonly single: SingleNodeRuns | undefined
  private readonly cluster: RunsCluster | undefined
  private readonly requests: ClusterRequests | undefined
  private keysLoaded: boolean
  private readonly openMode: boolean
  private timers: NodeJS.Timeout[] = []
  /**
   * Store work of this service's own (indexes, retention sweeps), which
   * stop() ends between slices and waits for: lmdb-js frees a transaction
   * at close that a cursor of a slice still running would use.
   */
  private readonly stopping = new AbortController()
  private readonly background = new Set<Promise<unknown>>()
  private readonly log: Logger

  /** `log` is the process's: the service's own lines are `component: harness`, its parts' their own (one `component` per line). */
  /** `revocation`: this service's own tokens (issuer AUTH_ISSUER) of a client removed or rotated since are refused. */
  constructor (private readonly config: Config, state: StateStore, private readonly bus: FollowableBus, log: Logger, self: HarnessProcess, registry?: Registry, cluster?: HarnessCluster, revocation?: Revocation) {
    this.log = log.child({ component: 'harness' })
    this.gate = new HarnessGate({
      enabled: config.svcHarnessAuthEnabled,
      issuer: config.idpIssuer,
      jwksUrl: config.idpJwksUrl,
      audience: config.idpRs256Audience,
      tenantAssertionSecret: config.harnessTenantAssertionSecret,
      revocation: revocation && { ownIssuer: config.authIssuer, check: claims => revocation.check(claims) }
    })
    this.keysLoaded = !config.svcHarnessAuthEnabled
    this.streams = new StreamBudget(config.harnessMaxStreams, config.harnessMaxStreamsPerTenant)
    this.replays = new ReplayBudget(config.harnessReplayBufferBytes)
    this.reads = new ReadRate(config.harnessTenantReadBytesPerS)
    this.index = new RunIndex(state)
    const modes = builtInModes({ url: config.harnessLlmUrl, model: config.harnessLlmModel, apiKey: config.harnessLlmApiKey })
    const limits = { total: config.harnessMaxRunsInFlight, perTenant: config.harnessMaxRunsInFlightPerTenant, perAddress: config.harnessMaxRunsInFlightPerAddress, lifetimeMs: config.harnessMaxRunS * 1000 }
    const runsLog = log.child({ component: 'runs' })
    const metrics = registry && new RunMetrics(registry)
    const sink = (inner: EventSink): EventSink => metrics?.sink(inner) ?? inner
    // Without the gate or the front door's assertion the tenant is a header anyone may set: a client address bounds what one client holds.
    this.openMode = !config.svcHarnessAuthEnabled && config.harnessTenantAssertionSecret === undefined
    if (cluster) {
      let manager: RunManager | undefined
      this.store = new RunStore(state, { partitionOf: runId => this.cluster!.partitionOf(runId) })
      const storage = this.tenantStorage()
      this.cluster = new RunsCluster({
        groupId: config.harnessGroupId,
        runsTopic: config.topicRuns,
        commandsTopic: config.topicRunsControl,
        partitions: config.kafkaTopicPartitions,
        retentionMs: config.harnessRetentionS * 1000,
        sessionTimeoutMs: config.harnessSessionTimeoutMs,
        url: cluster.url,
        self,
        maxBatch: config.harnessPublishBatchMax,
        lingerMs: config.harnessPublishLingerMs
      }, { kafka: cluster.kafka, registry, store: this.store, manager: () => manager!, hub: this.hub, transition: event => this.feed.publish(event), log: log.child({ component: 'runs-cluster' }) })
      // Nothing to relay: the runs topic is where events are committed. The watch reads every partition's transitions from it.
      manager = new RunManager(this.store, this.hub, modes, sink({ track () {}, add () {} }), runsLog, limits, { log: this.cluster.events, commitBeforeExecute: true, storage })
      this.manager = manager
      this.requests = new ClusterRequests({ cluster: this.cluster, manager, store: this.store, hub: this.hub, gate: this.gate, config, streams: this.streams, reads: this.reads, serve: (ctx, record) => this.serveRecord(ctx, record) })
    } else {
      this.store = new RunStore(state)
      this.single = new SingleNodeRuns({ config, state, bus, store: this.store, hub: this.hub, feed: this.feed, self, log })
      this.manager = new RunManager(this.store, this.hub, modes, sink(this.single.sink()), runsLog, limits, { storage: this.tenantStorage() })
    }
    metrics?.watch({ manager: this.manager, hub: this.hub, feed: this.feed, relay: this.single?.outbox })
  }

  private tenantStorage (): TenantStorage {
    // Unset, one tenant may take a quarter of the disk: the others keep the rest, whatever its size.
    const storedBytes = this.config.harnessTenantStoredBytes ?? quarterOfDisk(this.config.dataDir)
    return new TenantStorage({ storedBytes, writeBytesPerS: this.config.harnessTenantWriteBytesPerS }, tenant => this.store.storedBytes(tenant))
  }

  async start (): Promise<void> {
    await this.single?.start(this.manager)
    this.cluster?.start()
    this.timers.push(setInterval(() => { this.inBackground(this.sweep(), 'run retention sweep failed') }, RETENTION_SWEEP_MS).unref())
    if (!this.keysLoaded) this.loadKeys()
  }

  /** The work that may take long on a large store, after the servers listen: indexes of runs stored before they existed, then a first sweep. */
  afterListen (): void {
    const work = this.store.buildIndexes(this.stopping.signal)
      .then(built => { if (built > 0) this.log.info({ built }, 'runs stored before the retention and tenant indexes were indexed') })
      .then(() => this.sweep())
    this.inBackground(work, 'run indexes or retention failed')
  }

  private inBackground (work: Promise<unknown>, failure: string): void {
    const tracked = work.catch(err => this.log.error({ err }, failure)).finally(() => this.background.delete(tracked))
    this.background.add(tracked)
  }

  async stop (): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    this.stopping.abort()
    await Promise.all(this.background)
    await this.cluster?.stop()
    await this.single?.stop(this.manager)
  }

  /** Ends the watchers of `/runs:watch` (first thing at shutdown: a watch never ends by itself). */
  closeWatchers (): void {
    this.feed.close()
  }

  /** Readiness: the key set was fetched (when auth is on). */
  probe (): void {
    if (!this.keysLoaded) throw new Error(`key set not fetched yet from ${this.config.idpJwksUrl}`)
  }

  /** Readiness of the runs in a cluster: a member of the runs group with a live session, and the partitions it serves. */
  clusterState (): Record<string, unknown> | undefined {
    return this.cluster?.state()
  }

  /** Readiness of the bus for run events: its probe, and how many wait for it. */
  async busState (): Promise<Record<string, unknown>> {
    const waiting = this.single?.outbox.waiting ?? 0
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([
        this.bus.probe(),
        new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer from the bus in ${BUS_PROBE_MS} ms`)), BUS_PROBE_MS) })
      ])
    } catch (err) {
      throw new Error(`${(err as Error).message} (${waiting} run events waiting)`)
    } finally {
      clearTimeout(timer)
    }
    const lastError = this.single?.outbox.lastError
    return { run_events_waiting: waiting, ...(lastError === undefined ? {} : { last_error: lastError }) }
  }

  /**
   * The routes. `peer`: those of the listener other members forward to, in a
   * cluster, which also reads the members' own headers (`cluster/peer.ts`).
   */
  routes (peer = false): Route[] {
    const serves: Record<HarnessRouteKey, Omit<Route, 'method' | 'path'>> = {
      'POST /runs': { body: 'json', authorize: ctx => this.gate.tenant(ctx.headers), handler: (ctx, tenant: string) => this.runSync(ctx, tenant) },
      'GET /runs': { handler: ctx => this.list(ctx, peer) },
      'GET /runs:watch': { handler: ctx => this.watch(ctx) },
      'POST /runs:start': { body: 'json', authorize: ctx => this.gate.tenant(ctx.headers), handler: (ctx, tenant: string) => this.runAsync(ctx, tenant) },
      'GET /runs/{id}': { handler: ctx => this.getRun(ctx, peer) },
      'GET /runs/{id}/stream': { handler: ctx => this.stream(ctx, peer) },
      'POST /runs/{id}/cancel': { handler: ctx => this.cancel(ctx, peer) },
      'GET /skills': { handler: ctx => this.skills(ctx) }
    }
    return HARNESS_ROUTES.map(r => ({ errors: 'harness' as const, method: r.method, path: r.path, ...serves[routeKey(r)] }))
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
    const single = this.single
    if (this.stopping.signal.aborted) return
    const removed = await this.store.removeEndedBefore(Date.now() - this.config.harnessRetentionS * 1000, single && (runId => single.holds(runId)), this.stopping.signal)
    if (removed > 0) this.log.info({ removed }, 'terminal runs past retention removed')
  }

  /** In the open mode, the client address a start counts against (`HARNESS_MAX_RUNS_IN_FLIGHT_PER_ADDRESS`). */
  private client (ctx: RequestContext): { address?: string } {
    return this.openMode ? { address: ctx.remoteAddress } : {}
  }

  /** The run request of the body; a bad request throws before anything starts. */
  private request (ctx: RequestContext): RunRequest {
    requireJsonBody(ctx.headers['content-type'])
    return parseRunRequest(ctx.checkedJson(), m => this.manager.hasMode(m), DEFAULT_MODE)
  }

  private async runSync (ctx: RequestContext, tenant: string): Promise<Reply | undefined> {
    const request = this.request(ctx)
    this.reads.check(tenant)
    if (this.requests) return this.requests.runSync(ctx, tenant, request, this.client(ctx).address)
    const started = await this.manager.start({ tenant, ...this.client(ctx), ...request })
    const record = (await this.manager.waitForEnd(started.run_id, this.config.harnessSyncTimeoutMs))!
    return this.withEvents(isTerminal(record.status) ? 200 : 202, record)
  }

  private async runAsync (ctx: RequestContext, tenant: string): Promise<Reply> {
    const request = this.request(ctx)
    const record = this.requests ? await this.requests.start(tenant, request, this.client(ctx).address) : await this.manager.start({ tenant, ...this.client(ctx), ...request })
    return accepted(record)
  }

  /**
   * The run, if it exists and belongs to the caller's tenant (403 otherwise,
   * in flight or terminal). An id that could not be a run's (not a storage
   * identifier: too long for an LMDB key, say) is as unknown as any other.
   */
  private async owned (ctx: RequestContext): Promise<RunRecord> {
    const tenant = await this.gate.tenant(ctx.headers)
    const id = ctx.params['id']!
    const record = isStorageId(id) ? this.manager.get(id) : undefined
    if (!record) throw refusal('run_not_found')
    if (record.tenant_id !== tenant) throw refusal('cross_tenant_replay:run')
    return record
  }

  /** `GET /runs`: the tenant's runs, newest first, filtered and paged (`list.ts`); records without their events. */
  private async list (ctx: RequestContext, peer: boolean): Promise<Reply> {
    const tenant = await this.gate.tenant(ctx.headers)
    const query = parseListQuery(ctx.query, m => this.manager.hasMode(m))
    // A member's own page for another member's merge was checked where the merge is.
    if (!peer) this.reads.check(tenant)
    if (this.requests) return this.requests.list(ctx, tenant, query, peer, this.index)
    return this.reads.served(tenant, 200, JSON.stringify(this.index.page(tenant, query, id => this.manager.get(id))))
  }

  /** `GET /runs:watch`: the tenant's run transitions as server-sent events (`watch.ts`); in a cluster, every node's. */
  private async watch (ctx: RequestContext): Promise<undefined> {
    const tenant = await this.gate.tenant(ctx.headers)
    const place = this.streams.take(tenant)
    let tail: (() => void) | undefined
    const done = (): void => { place(); tail?.() }
    try {
      tail = await this.cluster?.tail.acquire().catch(err => { throw refusal('runs_unavailable', { headers: { 'retry-after': '1' }, cause: err }) })
      ctx.onAbort(done)
      await this.feed.watch(ctx, tenant, ctx.headers['last-event-id'], this.config.harnessSseBuffer, this.config.harnessHeartbeatMs, done)
    } catch (err) {
      done()
      throw err
    }
    return undefined
  }

  private async getRun (ctx: RequestContext, peer: boolean): Promise<Reply | undefined> {
    if (this.requests) return this.requests.read(ctx, peer)
    const after = parseEventsAfter(ctx.query)
    const record = await this.owned(ctx)
    this.reads.check(record.tenant_id)
    return this.withEvents(200, record, after)
  }

  private async cancel (ctx: RequestContext, peer: boolean): Promise<Reply | undefined> {
    if (this.requests) return this.requests.cancel(ctx, peer)
    const record = await this.owned(ctx)
    if (isTerminal(record.status)) throw refusal('run_not_in_flight', { value: record.status })
    const cancelled = await this.manager.cancel(record.run_id) ?? await this.single!.cancelElsewhere(this.manager, record)
    if (cancelled.status !== 'cancelled') throw refusal('run_not_in_flight', { value: cancelled.status })
    return this.withEvents(200, cancelled)
  }

  /** No skills are installed: the origin client's `skills.list()` gets the empty list, for any `tenant` it names. */
  private async skills (ctx: RequestContext): Promise<Reply> {
    await this.gate.tenant(ctx.headers)
    return { status: 200, body: [] }
  }

  /** The record with its events (`RunStore.document`). */
  private withEvents (status: number, record: RunRecord, afterId = 0): Reply {
    return this.reads.served(record.tenant_id, status, this.store.document(record, afterId))
  }

  /** Replays stored events after Last-Event-ID, then follows live ones (`followRun`). */
  private async stream (ctx: RequestContext, peer: boolean): Promise<undefined> {
    if (this.requests) return this.requests.stream(ctx, peer)
    return this.serveRecord(ctx, await this.owned(ctx))
  }

  /** The stream of a run this process serves. */
  private serveRecord (ctx: RequestContext, record: RunRecord): undefined {
    const after = parseLastEventId(ctx.headers['last-event-id'])
    if (!ctx.live) return undefined
    const place = this.streams.take(record.tenant_id)
    const sse = new SseStream(ctx, record.run_id, this.config.harnessSseBuffer, this.config.harnessHeartbeatMs, after)
    sse.onClose(place)
    this.single?.follow(record.run_id)
    const isActive = (id: string): boolean => this.manager.isActive(id) || (this.single?.isActive(id) ?? false)
    followRun(sse, record.run_id, after, { store: this.store, hub: this.hub, isActive, budget: this.replays }).catch(err => {
      this.log.error({ err, runId: record.run_id }, 'run stream failed')
      sse.end()
    })
    return undefined
  }
}

/** `POST /runs:start`'s 202: the run's id, its status and where to follow it. */
function accepted (record: Pick<RunRecord, 'run_id' | 'status'>): Reply {
  const self = `/runs/${record.run_id}`
  return { status: 202, body: { run_id: record.run_id, status: record.status, links: { self, stream: `${self}/stream`, cancel: `${self}/cancel` } } }
}

function quarterOfDisk (dir: string): number {
  const fs = statfsSync(dir)
  return Math.floor(fs.blocks * fs.bsize / 4)
}
