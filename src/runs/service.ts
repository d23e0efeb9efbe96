import type { Logger } from 'pino'
import { Gauge, type Registry } from 'prom-client'
import type { Bus } from '../bus/index.js'
import type { Config } from '../config/index.js'
import { type Reply, type RequestContext, type Route } from '../http/index.js'
import { GatewayError } from '../errors.js'
import type { StateStore } from '../state/index.js'
import { isStorageId } from '../validation/index.js'
import { followRun } from './follow.js'
import { HarnessGate } from './gate.js'
import { RunHub } from './hub.js'
import { RunManager } from './manager.js'
import { builtInModes, DEFAULT_MODE } from './modes/index.js'
import { RunOutbox } from './outbox.js'
import { parseLastEventId, parseRunRequest } from './request.js'
import { SseStream } from './sse.js'
import { RunStore } from './store.js'
import { isTerminal, type RunRecord } from './types.js'

const RETENTION_SWEEP_MS = 60 * 60 * 1000
const KEY_RETRY_MIN_MS = 250
const KEY_RETRY_MAX_MS = 10_000
/** Shorter than readiness's own limit, so a bus that does not answer is reported with what waits for it. */
const BUS_PROBE_MS = 1500

/** The run harness on HARNESS_PORT: the gate, the run manager, SSE, the bus relay, recovery and retention. */
export class HarnessService {
  private readonly manager: RunManager
  private readonly hub = new RunHub()
  private readonly store: RunStore
  private readonly outbox: RunOutbox
  private readonly gate: HarnessGate
  private keysLoaded: boolean
  private timers: NodeJS.Timeout[] = []

  constructor (private readonly config: Config, state: StateStore, private readonly bus: Bus, private readonly log: Logger, registry?: Registry) {
    this.store = new RunStore(state)
    this.gate = new HarnessGate({ enabled: config.svcHarnessAuthEnabled, issuer: config.idpIssuer, jwksUrl: config.idpJwksUrl, audience: config.idpRs256Audience, tenantAssertionSecret: config.harnessTenantAssertionSecret })
    this.keysLoaded = !config.svcHarnessAuthEnabled
    this.outbox = new RunOutbox(state, this.store, {
      maxBatch: config.harnessPublishBatchMax,
      lingerMs: config.harnessPublishLingerMs,
      publish: messages => bus.publish(config.topicRuns, messages),
      probe: () => bus.probe(),
      log: log.child({ component: 'run-outbox' })
    })
    const modes = builtInModes({ url: config.harnessLlmUrl, model: config.harnessLlmModel, apiKey: config.harnessLlmApiKey })
    this.manager = new RunManager(this.store, this.hub, modes, this.outbox, log.child({ component: 'runs' }))
    if (registry) {
      const outbox = this.outbox
      new Gauge({ name: 'harness_run_events_waiting', help: 'Run events stored but not yet acknowledged by the bus', registers: [registry], collect () { this.set(outbox.waiting) } })
      new Gauge({ name: 'harness_run_events_dropped', help: 'Run events skipped because the bus refused them while it took others', registers: [registry], collect () { this.set(outbox.dropped) } })
    }
  }

  async start (): Promise<void> {
    const interrupted = await this.manager.recover()
    if (interrupted > 0) this.log.warn({ interrupted }, 'runs in flight at the last stop were marked failed (interrupted)')
    this.outbox.start()
    await this.sweep()
    this.timers.push(setInterval(() => { this.sweep().catch(err => this.log.error({ err }, 'run retention sweep failed')) }, RETENTION_SWEEP_MS).unref())
    if (!this.keysLoaded) this.loadKeys()
  }

  async stop (): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    await this.manager.drain()
    await this.outbox.stop(this.config.shutdownTimeoutMs)
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
  }

  private async begin (ctx: RequestContext, tenant: string): Promise<RunRecord> {
    const request = parseRunRequest(ctx.json(), m => this.manager.hasMode(m), DEFAULT_MODE)
    return this.manager.start({ tenant, ...request })
  }

  private async runSync (ctx: RequestContext, tenant: string): Promise<Reply> {
    const started = await this.begin(ctx, tenant)
    const record = (await this.manager.waitForEnd(started.run_id, this.config.harnessSyncTimeoutMs))!
    return this.withEvents(isTerminal(record.status) ? 200 : 202, record)
  }

  private async runAsync (ctx: RequestContext, tenant: string): Promise<Reply> {
    const record = await this.begin(ctx, tenant)
    const self = `/runs/${record.run_id}`
    return { status: 202, body: { run_id: record.run_id, status: record.status, links: { self, stream: `${self}/stream`, cancel: `${self}/cancel` } } }
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
    if (!record) throw new GatewayError('not_found', 'run_not_found')
    if (record.tenant_id !== tenant) throw new GatewayError('forbidden', 'cross_tenant_replay:run')
    return record
  }

  private async getRun (ctx: RequestContext): Promise<Reply> {
    return this.withEvents(200, await this.owned(ctx))
  }

  private async cancel (ctx: RequestContext): Promise<Reply> {
    const record = await this.owned(ctx)
    const cancelled = await this.manager.cancel(record.run_id)
    if (!cancelled) throw new GatewayError('conflict', `run_not_in_flight:${record.status}`)
    return this.withEvents(200, cancelled)
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
    followRun(sse, record.run_id, after, { store: this.store, hub: this.hub, isActive: id => this.manager.isActive(id) }).catch(err => {
      this.log.error({ err, runId: record.run_id }, 'run stream failed')
      sse.end()
    })
    return undefined
  }
}
