import type { Logger } from 'pino'
import { MicroBatcher, type Bus, type BusMessage } from '../bus/index.js'
import type { Config } from '../config/index.js'
import { type Reply, type RequestContext, type Route } from '../http/index.js'
import { GatewayError } from '../errors.js'
import type { StateStore } from '../state/index.js'
import { HarnessGate } from './gate.js'
import { RunHub } from './hub.js'
import { RunManager } from './manager.js'
import { builtInModes, DEFAULT_MODE } from './modes/index.js'
import { parseRunRequest } from './request.js'
import { SseStream } from './sse.js'
import { RunStore } from './store.js'
import { isTerminal, isTerminalEvent, type RunEvent, type RunRecord } from './types.js'

const RETENTION_SWEEP_MS = 60 * 60 * 1000
const KEY_RETRY_MIN_MS = 250
const KEY_RETRY_MAX_MS = 10_000

/** The run harness on HARNESS_PORT: the gate, the run manager, SSE, recovery and retention. */
export class HarnessService {
  private readonly manager: RunManager
  private readonly hub = new RunHub()
  private readonly store: RunStore
  private readonly gate: HarnessGate
  private readonly publisher: MicroBatcher
  private keysLoaded: boolean
  private timers: NodeJS.Timeout[] = []

  constructor (private readonly config: Config, state: StateStore, bus: Bus, private readonly log: Logger) {
    this.store = new RunStore(state)
    this.gate = new HarnessGate({ enabled: config.svcHarnessAuthEnabled, issuer: config.idpIssuer, jwksUrl: config.idpJwksUrl, audience: config.idpRs256Audience, tenantAssertionSecret: config.harnessTenantAssertionSecret })
    this.keysLoaded = !config.svcHarnessAuthEnabled
    this.publisher = new MicroBatcher({ maxBatch: config.harnessPublishBatchMax, lingerMs: config.harnessPublishLingerMs, maxPending: 100_000, timeoutMs: 30_000, publish: messages => bus.publish(config.topicRuns, messages) })
    const modes = builtInModes({ url: config.harnessLlmUrl, model: config.harnessLlmModel, apiKey: config.harnessLlmApiKey })
    const unpublished = (err: Error, message: BusMessage): void => { log.warn({ err: err.message, runId: message.key }, 'run event not published to the bus') }
    const publish = (message: BusMessage): void => { this.publisher.push(message, unpublished) }
    this.manager = new RunManager(this.store, this.hub, modes, publish, log.child({ component: 'runs' }))
  }

  async start (): Promise<void> {
    const interrupted = await this.manager.recover()
    if (interrupted > 0) this.log.warn({ interrupted }, 'runs in flight at the last stop were marked failed (interrupted)')
    await this.sweep()
    this.timers.push(setInterval(() => { this.sweep().catch(err => this.log.error({ err }, 'run retention sweep failed')) }, RETENTION_SWEEP_MS).unref())
    if (!this.keysLoaded) this.loadKeys()
  }

  async stop (): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    await this.manager.drain()
    await this.publisher.drain()
  }

  /** Readiness: the key set was fetched (when auth is on). */
  probe (): void {
    if (!this.keysLoaded) throw new Error(`key set not fetched yet from ${this.config.idpJwksUrl}`)
  }

  routes (): Route[] {
    const common = { errors: 'harness' as const }
    return [
      { ...common, method: 'POST', path: '/runs', body: 'json', handler: ctx => this.runSync(ctx) },
      { ...common, method: 'POST', path: '/runs:start', body: 'json', handler: ctx => this.runAsync(ctx) },
      { ...common, method: 'GET', path: '/runs/{id}', handler: ctx => this.getRun(ctx) },
      { ...common, method: 'GET', path: '/runs/{id}/stream', handler: ctx => this.stream(ctx) },
      { ...common, method: 'POST', path: '/runs/{id}/cancel', handler: ctx => this.cancel(ctx) }
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
    const removed = await this.store.removeEndedBefore(Date.now() - this.config.harnessRetentionS * 1000)
    if (removed > 0) this.log.info({ removed }, 'terminal runs past retention removed')
  }

  private async begin (ctx: RequestContext): Promise<RunRecord> {
    const tenant = await this.gate.tenant(ctx.headers)
    const request = parseRunRequest(ctx.json(), m => this.manager.hasMode(m), DEFAULT_MODE)
    return this.manager.start({ tenant, ...request })
  }

  private async runSync (ctx: RequestContext): Promise<Reply> {
    const started = await this.begin(ctx)
    const record = (await this.manager.waitForEnd(started.run_id, this.config.harnessSyncTimeoutMs))!
    return { status: isTerminal(record.status) ? 200 : 202, body: record }
  }

  private async runAsync (ctx: RequestContext): Promise<Reply> {
    const record = await this.begin(ctx)
    const self = `/runs/${record.run_id}`
    return { status: 202, body: { run_id: record.run_id, status: record.status, links: { self, stream: `${self}/stream`, cancel: `${self}/cancel` } } }
  }

  /** The run, if it exists and belongs to the caller's tenant (403 otherwise, in flight or terminal). */
  private async owned (ctx: RequestContext): Promise<RunRecord> {
    const tenant = await this.gate.tenant(ctx.headers)
    const record = this.manager.get(ctx.params['id']!)
    if (!record) throw new GatewayError('not_found', 'run_not_found')
    if (record.tenant_id !== tenant) throw new GatewayError('forbidden', 'cross_tenant_replay:run')
    return record
  }

  private async getRun (ctx: RequestContext): Promise<Reply> {
    return { status: 200, body: await this.owned(ctx) }
  }

  private async cancel (ctx: RequestContext): Promise<Reply> {
    const record = await this.owned(ctx)
    const cancelled = await this.manager.cancel(record.run_id)
    if (!cancelled) throw new GatewayError('conflict', `run_not_in_flight:${record.status}`)
    return { status: 200, body: cancelled }
  }

  /**
   * Replays stored events after Last-Event-ID, then follows live ones. The
   * subscription starts before the replay, which reads LMDB synchronously:
   * live events come from commit callbacks, so none can arrive during it,
   * and one stored but not yet announced is dropped by the stream as a
   * repeated id. Nothing falls in the gap between the two.
   */
  private async stream (ctx: RequestContext): Promise<undefined> {
    const record = await this.owned(ctx)
    if (!ctx.live) return undefined
    const after = Number(ctx.headers['last-event-id'] ?? 0) || 0
    let unsubscribe = (): void => {}
    const sse = new SseStream(ctx, this.config.harnessSseBuffer, this.config.harnessHeartbeatMs, () => unsubscribe())
    const deliver = (e: RunEvent): void => {
      sse.event(e)
      if (isTerminalEvent(e)) sse.end()
    }
    unsubscribe = this.hub.subscribe(record.run_id, deliver)
    for (const e of this.store.eventsAfter(record.run_id, after)) deliver(e)
    return undefined
  }
}
