import type * as UWS from 'uWebSockets.js'
import type { Logger } from 'pino'
import type { Registry } from 'prom-client'
import { accessLog, type AccessLog } from './access-log.js'
import { BodyReader, payloadTooLarge } from './body.js'
import { BodyBudget } from './budget.js'
import { LATER, RequestContext, type Reply, type Settle } from './context.js'
import { GatewayError, toGatewayError, type ErrorCode } from '../errors.js'
import { errorBody, type ErrorDialect } from './error-bodies.js'
import { Intake, bodiesOverloaded, type CutReason, type IntakeHost } from './intake.js'
import { ServerMetrics } from './metrics.js'
import { parseQuery } from './query.js'
import type { BrowserGuard } from './browser-guard.js'
import { bindProblem, listenError } from './listen.js'
import { Router } from './router.js'

/** A reply, a promise of one, or LATER: the handler will call ctx.settle() (once). */
export type Handler<A = unknown> = (ctx: RequestContext, auth: A) => Reply | undefined | typeof LATER | Promise<Reply | undefined>

export interface Route<A = any> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS' | 'HEAD'
  /** `{name}` marks a parameter; a trailing `*` captures the rest; `:` is literal. */
  path: string
  /** `json`: read whole (up to bodyLimit) before the handler, then ctx.json(); `stream`: ctx.stream. */
  body?: 'none' | 'json' | 'stream'
  bodyLimit?: number
  /**
   * The route's own check of the caller (a token), on the headers alone. It
   * runs before any of a `json` body is read past what came with the headers:
   * when it throws, its error is the answer and the body is discarded, never
   * buffered. Its result is the handler's second argument.
   */
  authorize?: (ctx: RequestContext) => A | Promise<A>
  errors?: ErrorDialect
  /** Written to the access log at debug instead of info (health probes). */
  quiet?: boolean
  handler: Handler<A>
}

/** A route of a server as another route of the process may serve a request with (serveLocal). */
export interface LocalRoute {
  readonly route: Route
  /** Its path parameters for the path it was found by. */
  readonly params: Record<string, string>
  /** Its body limit on its own server. */
  readonly limit: number
}

export interface HttpServerOptions {
  name: string
  logger: Logger
  registry: Registry
  uws: typeof UWS
  defaultBodyLimit?: number
  /** Bytes a streamed body may queue before the socket is paused. */
  streamHighWaterMark?: number
  /** Body shape of the server's own errors (404, 405, 503 while draining). */
  errors?: ErrorDialect
  /** Memory for JSON bodies, shared by the process's servers (HTTP_BODY_BUFFER_BYTES). */
  bodyBudget?: BodyBudget
  /** Memory for body bytes no route's check vouched for, shared likewise (HTTP_OPEN_BODY_BUFFER_BYTES). */
  openBodyBudget?: BodyBudget
  /** The slowest a body may come (HTTP_BODY_MIN_BYTES_PER_S). */
  bodyMinBytesPerS?: number
  /** Bounds on reading the rest of a body after an early answer (HTTP_DRAIN_MAX_BYTES, HTTP_DRAIN_TIMEOUT_MS). */
  drainMaxBytes?: number
  drainTimeoutMs?: number
  /** Refuses, on the headers, what a browser on another site could make this server do (browser-guard.ts). */
  guard?: BrowserGuard
}

const MiB = 1024 * 1024
const DEFAULT_BODY_LIMIT = MiB
const NO_BODY = Buffer.alloc(0)
/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT (a const enum in its types, so not importable as a value). */
const EXCLUSIVE_PORT = 1
/** uWS's `listen(host, port, options, cb)`, which its types leave out (they give options only without a host). */
type ListenAt = (host: string, port: number, options: number, cb: (socket: UWS.us_listen_socket | false) => void) => UWS.TemplatedApp
/**
 * 503s the gateway answers by design when a client or the load asks for more
 * than a budget allows: logged at warn, not error, since a client (or an
 * attacker) causes them at will and they say nothing is broken. A bus or
 * store that fails stays at error.
 */
const SHEDDING: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['overloaded', 'storage_busy', 'shutting_down'])

interface Entry { route: Route, label: string, limit: number, dialect: ErrorDialect }

/** A stream route's body when the request has none: read, it ends at once (as a JSON route gets an empty rawBody). */
function emptyBody (): BodyReader {
  const body = new BodyReader({ pause () {}, resume () {} }, 1, 0)
  body.feed(new ArrayBuffer(0), true)
  return body
}

/**
 * One uWS app: routing, bodies, request ids, the access log, metrics, the
 * mapping of errors to responses, and draining on shutdown.
 */
export class HttpServer implements IntakeHost<Entry> {
  readonly budget: BodyBudget
  readonly openBudget: BodyBudget
  readonly minBytesPerS: number
  readonly drainMaxBytes: number
  readonly drainTimeoutMs: number
  private readonly app: UWS.TemplatedApp
  private readonly router = new Router<Entry>()
  private readonly log: Logger
  private readonly access: AccessLog
  private readonly dialect: ErrorDialect
  private readonly metrics: ServerMetrics
  private readonly finished = (ctx: RequestContext, status: number): void => { this.finish(ctx, status) }
  private readonly settleLater: Settle = (ctx, reply, err) => {
    if (err !== undefined) this.fail(ctx, err)
    else this.reply(ctx, reply)
    this.handlerDone()
  }
  /** Bodies being read, measured once a second against the minimum rate. */
  private readonly reading = new Set<Intake<Entry>>()
  private clock: NodeJS.Timeout | undefined
  private listenSocket: UWS.us_listen_socket | undefined
  private draining: Promise<void> | undefined
  private allDone: (() => void) | undefined
  private inFlight = 0
  /**
   * Handlers not yet settled. A handler can outlive its request (a client
   * that left mid-upload) while it cleans up, and shutdown must wait for it
   * too, or close what that cleanup writes to.
   */
  private running = 0
  boundPort = 0

  constructor (private readonly options: HttpServerOptions) {
    this.log = options.logger.child({ server: options.name })
    this.access = accessLog(this.log)
    this.dialect = options.errors ?? 'plain'
    this.budget = options.bodyBudget ?? new BodyBudget(64 * MiB)
    this.openBudget = options.openBodyBudget ?? new BodyBudget(4 * MiB)
    this.minBytesPerS = options.bodyMinBytesPerS ?? 1024
    this.drainMaxBytes = options.drainMaxBytes ?? 64 * MiB
    this.drainTimeoutMs = options.drainTimeoutMs ?? 10_000
    this.app = options.uws.App()
    this.app.any('/*', (res, req) => this.dispatch(res, req))
    this.metrics = new ServerMetrics(options.name, options.registry)
  }

  get inFlightRequests (): number {
    return this.inFlight
  }

  route<A> (route: Route<A>): this {
    const limit = route.bodyLimit ?? this.options.defaultBodyLimit ?? DEFAULT_BODY_LIMIT
    this.router.add(route.method, route.path, { route, label: route.path, limit, dialect: route.errors ?? this.dialect })
    return this
  }

  /**
   * The route this server would serve `method path` with, for a route of
   * another server in the process that serves its admitted requests with it
   * (the front door with the harness's: serveLocal).
   */
  local (method: string, path: string): LocalRoute | undefined {
    const found = this.router.find(method, path)
    return found !== undefined && 'value' in found ? { route: found.value.route, params: found.params, limit: found.value.limit } : undefined
  }

  /**
   * A WebSocket route on this server's port, uWS's own: `behavior.upgrade`
   * decides who may open one and answers those it refuses. Requests that
   * do not ask to upgrade go to the routes as any other.
   */
  websocket<U> (path: string, behavior: UWS.WebSocketBehavior<U>): this {
    this.app.ws(path, behavior)
    return this
  }

  /**
   * Binds `host:port`. `exclusive`: no other socket may share the port (no
   * SO_REUSEPORT), as for any process but a supervised worker, whose
   * siblings share it by design. A failure names `setting` and the kernel's
   * reason (EADDRINUSE...).
   */
  listen (host: string, port: number, options: { exclusive?: boolean, setting?: string } = {}): Promise<number> {
    const setting = options.setting ?? `${this.options.name} port`
    const app = this.app as unknown as { listen: ListenAt }
    return new Promise((resolve, reject) => {
      app.listen(host, port, options.exclusive === true ? EXCLUSIVE_PORT : 0, socket => {
        if (!socket) {
          bindProblem(host, port).then(code => reject(listenError(code ?? 'ELISTEN', setting, host, port)), reject)
          return
        }
        this.listenSocket = socket
        this.boundPort = this.options.uws.us_socket_local_port(socket)
        resolve(this.boundPort)
      })
    })
  }

  /**
   * Stops accepting connections and resolves when in-flight requests, and
   * the handlers that served them, are done.
   * Requests that arrive on kept-alive connections meanwhile get 503 and a close.
   */
  close (): Promise<void> {
    if (this.listenSocket) {
      this.options.uws.us_listen_socket_close(this.listenSocket)
      this.listenSocket = undefined
    }
    this.draining ??= this.inFlight === 0 && this.running === 0
      ? Promise.resolve()
      : new Promise<void>(resolve => { this.allDone = resolve })
    return this.draining
  }

  drained (bytes: number): void {
    this.metrics.drained(bytes)
  }

  cutShort (reason: CutReason): void {
    this.metrics.cutShort(reason)
  }

  collected (intake: Intake<Entry>): void {
    const ctx = intake.exchange as RequestContext
    ctx.rawBody = intake.body()
    this.run(ctx, intake.entry!, intake.auth)
  }

  refused (intake: Intake<Entry>, err: GatewayError): void {
    this.fail(intake.exchange as RequestContext, err)
  }

  private dispatch (res: UWS.HttpResponse, req: UWS.HttpRequest): void {
    const ctx = new RequestContext(res, req, this.finished)
    res.onAborted(() => ctx.abort())
    this.inFlight++
    const found = this.router.find(ctx.method, ctx.path)
    let entry: Entry | undefined
    if (found !== undefined && 'value' in found) {
      entry = found.value
      ctx.params = found.params
      ctx.route = entry.label
      ctx.quiet = entry.route.quiet === true
      ctx.dialect = entry.dialect
    } else ctx.dialect = this.dialect
    const issue = ctx.headerIssue
    if (issue?.framing === true) {
      // Answered after uWS has parsed all it read: answered now, uWS would go on to serve a request smuggled in behind this one.
      setImmediate(this.refuseFraming, ctx, issue.error)
      return
    }
    let intake: Intake<Entry> | undefined
    if (ctx.hasBody) {
      intake = new Intake(ctx, entry, ctx.declaredLength, this)
      ctx.intake = intake as Intake<unknown>
      res.onData(intake.onData)
      this.measure(intake)
    }
    if (this.draining) return this.respond(ctx, 503, errorBody(ctx.dialect, new GatewayError('shutting_down', 'server is shutting down')), undefined, true)
    if (issue !== undefined) return this.fail(ctx, issue.error)
    if (entry === undefined) {
      return this.fail(ctx, found !== undefined && 'allowed' in found
        ? new GatewayError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`, { headers: { allow: found.allowed.join(', ') } })
        : new GatewayError('not_found', `no route for ${ctx.method} ${ctx.path}`))
    }
    const refusal = this.options.guard?.(ctx.method, ctx.headers)
    if (refusal !== undefined) return this.fail(ctx, refusal)
    const mode = entry.route.body ?? 'none'
    if (intake !== undefined && mode !== 'none') {
      intake.limit = entry.limit
      if ((ctx.declaredLength ?? 0) > entry.limit) return this.fail(ctx, payloadTooLarge(entry.limit))
      if (mode === 'stream') {
        intake.mode = 'stream'
        intake.stream = ctx.stream = new BodyReader(ctx, this.options.streamHighWaterMark ?? 256 * 1024, entry.limit)
      } else intake.mode = 'collect'
    }
    const authorize = entry.route.authorize
    if (authorize === undefined) return this.authorized(ctx, entry, undefined)
    let auth: unknown
    try {
      auth = authorize(ctx)
    } catch (err) {
      return this.fail(ctx, err)
    }
    if (auth instanceof Promise) {
      this.running++
      auth.then(
        a => { this.authorized(ctx, entry, a); this.handlerDone() },
        err => { this.fail(ctx, err); this.handlerDone() })
    } else this.authorized(ctx, entry, auth)
  }

  /** The route let the request in: run its handler, once a JSON body is whole. */
  private authorized (ctx: RequestContext, entry: Entry, auth: unknown): void {
    if (!ctx.live || ctx.answered) return
    const intake = ctx.intake as Intake<Entry> | undefined
    if (intake === undefined || intake.mode !== 'collect') {
      if (intake?.overloaded === true) return this.refused(intake, bodiesOverloaded())
      if (intake === undefined && entry.route.body === 'json') ctx.rawBody = NO_BODY
      if (intake === undefined && entry.route.body === 'stream') ctx.stream = emptyBody()
      return this.run(ctx, entry, auth)
    }
    intake.auth = auth
    if (intake.overloaded || !intake.admit(entry.route.authorize === undefined ? this.openBudget : this.budget)) return this.refused(intake, bodiesOverloaded())
    if (intake.complete) this.collected(intake)
    else ctx.resume()
  }

  private run (ctx: RequestContext, entry: Entry, auth: unknown): void {
    let result: ReturnType<Handler>
    try {
      if (ctx.query !== '') parseQuery(ctx.query)
      result = entry.route.handler(ctx, auth)
    } catch (err) {
      return this.fail(ctx, err)
    }
    if (result === LATER) {
      this.running++
      ctx.answerLater(this.settleLater)
    } else if (result instanceof Promise) {
      this.running++
      result.then(
        reply => { this.reply(ctx, reply); this.handlerDone() },
        err => { this.fail(ctx, err); this.handlerDone() })
    } else this.reply(ctx, result)
  }

  private reply (ctx: RequestContext, reply: Reply | undefined): void {
    if (reply) this.respond(ctx, reply.status, reply.body, reply.headers)
  }

  private fail (ctx: RequestContext, err: unknown): void {
    if (!ctx.live) {
      this.log.debug({ reqId: ctx.requestId, err }, 'error after the client left')
      return
    }
    const e = toGatewayError(err)
    if (e.status >= 500) {
      const line = { reqId: ctx.requestId, route: ctx.route, code: e.code, err: e.cause ?? e }
      if (SHEDDING.has(e.code)) this.log.warn(line, e.message)
      else this.log.error(line, e.message)
    }
    this.respond(ctx, e.status, errorBody(ctx.dialect, e), e.headers)
  }

  /** The one way out for an answer: at once when the body is read, else after the rest of it (see Intake). */
  private respond (ctx: RequestContext, status: number, body: unknown, headers: Record<string, string> | undefined, close = false): void {
    if (!ctx.live || ctx.answered) return
    ctx.answered = true
    const intake = ctx.intake
    if (intake !== undefined && !intake.complete) intake.answerAfterBody({ status, body, headers, close })
    else ctx.send(status, body, headers, close)
  }

  private readonly refuseFraming = (ctx: RequestContext, err: GatewayError): void => {
    if (!ctx.live) return
    ctx.answered = true
    ctx.send(err.status, errorBody(ctx.dialect, err), undefined, true)
  }

  private measure (intake: Intake<Entry>): void {
    this.reading.add(intake)
    this.clock ??= setInterval(this.tick, 1000).unref()
  }

  private readonly tick = (): void => {
    for (const intake of this.reading) if (!intake.tick()) this.reading.delete(intake)
    if (this.reading.size === 0) {
      clearInterval(this.clock)
      this.clock = undefined
    }
  }

  private finish (ctx: RequestContext, status: number): void {
    if (ctx.intake !== undefined) {
      ctx.intake.close()
      this.reading.delete(ctx.intake as Intake<Entry>)
    }
    const seconds = (performance.now() - ctx.startedAt) / 1000
    this.metrics.request(ctx.method, ctx.route, status, seconds)
    this.access(ctx.requestId, ctx.method, ctx.route, status, Math.round(seconds * 1e5) / 100, ctx.quiet)
    this.inFlight--
    this.settled()
  }

  private handlerDone (): void {
    this.running--
    this.settled()
  }

  private settled (): void {
    if (this.inFlight === 0 && this.running === 0 && this.allDone) this.allDone()
  }
}
