import type * as UWS from 'uWebSockets.js'
import type { Logger } from 'pino'
import { Counter, Histogram, type Registry } from 'prom-client'
import { BodyReader, collectBody, payloadTooLarge } from './body.js'
import { RequestContext, type Reply } from './context.js'
import { GatewayError, toGatewayError } from '../errors.js'
import { errorBody, type ErrorDialect } from './error-bodies.js'
import { Router } from './router.js'

export type Handler = (ctx: RequestContext) => Reply | undefined | Promise<Reply | undefined>

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS' | 'HEAD'
  /** `{name}` marks a parameter; a trailing `*` captures the rest; `:` is literal. */
  path: string
  /** `json`: read whole (up to bodyLimit) before the handler, then ctx.json(); `stream`: ctx.stream. */
  body?: 'none' | 'json' | 'stream'
  bodyLimit?: number
  errors?: ErrorDialect
  /** Written to the access log at debug instead of info (health probes). */
  quiet?: boolean
  handler: Handler
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
}

const DEFAULT_BODY_LIMIT = 1024 * 1024

interface Entry { route: Route, label: string, limit: number, dialect: ErrorDialect }

/**
 * One uWS app: routing, bodies, request ids, the access log, metrics, the
 * mapping of errors to responses, and draining on shutdown.
 */
export class HttpServer {
  private readonly app: UWS.TemplatedApp
  private readonly router = new Router<Entry>()
  private readonly log: Logger
  private readonly duration: Histogram<'method' | 'route' | 'status'>
  private readonly count: Counter<'method' | 'route' | 'status'>
  /** Metric children per method/route/status: prom-client hashes a label object on every call otherwise. */
  private readonly series = new Map<string, { duration: { observe(v: number): void }, count: { inc(): void } }>()
  private listenSocket: UWS.us_listen_socket | undefined
  private draining: Promise<void> | undefined
  private drained: (() => void) | undefined
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
    this.app = options.uws.App()
    this.app.any('/*', (res, req) => this.dispatch(res, req))
    const labelNames = ['method', 'route', 'status'] as const
    this.duration = new Histogram({
      name: `${options.name}_http_request_duration_seconds`,
      help: `Latency of ${options.name} requests by route`,
      labelNames,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [options.registry]
    })
    this.count = new Counter({
      name: `${options.name}_http_requests_total`,
      help: `Requests to ${options.name} by route and status`,
      labelNames,
      registers: [options.registry]
    })
  }

  get inFlightRequests (): number {
    return this.inFlight
  }

  route (route: Route): this {
    const limit = route.bodyLimit ?? this.options.defaultBodyLimit ?? DEFAULT_BODY_LIMIT
    this.router.add(route.method, route.path, { route, label: route.path, limit, dialect: route.errors ?? 'plain' })
    return this
  }

  listen (host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, socket => {
        if (!socket) return reject(new Error(`${this.options.name}: cannot listen on ${host}:${port}`))
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
      : new Promise<void>(resolve => { this.drained = resolve })
    return this.draining
  }

  private dispatch (res: UWS.HttpResponse, req: UWS.HttpRequest): void {
    const ctx = new RequestContext(res, req, (c, status) => this.finish(c, status))
    res.onAborted(() => ctx.abort())
    this.inFlight++
    const dialect = this.options.errors ?? 'plain'
    const found = this.router.find(ctx.method, ctx.path)
    if (this.draining) {
      // In the dialect of the route asked for: its clients parse that body only.
      const routeDialect = typeof found === 'object' ? found.value.dialect : dialect
      ctx.send(503, errorBody(routeDialect, new GatewayError('shutting_down', 'server is shutting down')), { connection: 'close' }, true)
      return
    }
    if (found === undefined || found === 'method_not_allowed') {
      const err = found === undefined
        ? new GatewayError('not_found', `no route for ${ctx.method} ${ctx.path}`)
        : new GatewayError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}`)
      ctx.send(err.status, errorBody(dialect, err))
      return
    }
    const entry = found.value
    ctx.params = found.params
    ctx.route = entry.label
    ctx.quiet = entry.route.quiet === true
    const mode = entry.route.body ?? 'none'
    if (mode !== 'none') {
      ctx.bodyComplete = false
      if (Number(ctx.headers['content-length']) > entry.limit) {
        this.fail(ctx, entry, payloadTooLarge(entry.limit))
        return
      }
    }
    if (mode === 'json') this.readJson(ctx, entry)
    else {
      if (mode === 'stream') {
        const stream = new BodyReader(res, () => ctx.live, this.options.streamHighWaterMark ?? 256 * 1024, entry.limit)
        ctx.stream = stream
        res.onData((chunk, isLast) => {
          if (isLast) ctx.bodyComplete = true
          stream.feed(chunk, isLast)
        })
      }
      this.run(ctx, entry)
    }
  }

  private readJson (ctx: RequestContext, entry: Entry): void {
    collectBody(ctx.res, entry.limit, body => {
      if (!ctx.live) return
      if (!Buffer.isBuffer(body)) return this.fail(ctx, entry, payloadTooLarge(entry.limit))
      ctx.rawBody = body
      ctx.bodyComplete = true
      this.run(ctx, entry)
    })
  }

  private run (ctx: RequestContext, entry: Entry): void {
    let result: ReturnType<Handler>
    try {
      result = entry.route.handler(ctx)
    } catch (err) {
      return this.fail(ctx, entry, err)
    }
    if (result instanceof Promise) {
      this.running++
      result.then(
        reply => { this.reply(ctx, reply); this.handlerDone() },
        err => { this.fail(ctx, entry, err); this.handlerDone() })
    } else this.reply(ctx, result)
  }

  private reply (ctx: RequestContext, reply: Reply | undefined): void {
    if (reply) ctx.send(reply.status, reply.body, reply.headers, !ctx.bodyComplete)
  }

  /** An answer given before the body was read closes the connection: the rest of the body would be read as the next request. */
  private fail (ctx: RequestContext, entry: Entry, err: unknown): void {
    if (!ctx.live) {
      this.log.debug({ reqId: ctx.requestId, err }, 'error after the client left')
      return
    }
    const e = toGatewayError(err)
    if (e.status >= 500) this.log.error({ reqId: ctx.requestId, route: ctx.route, code: e.code, err: e.cause ?? e }, e.message)
    ctx.send(e.status, errorBody(entry.dialect, e), e.headers, !ctx.bodyComplete)
  }

  private finish (ctx: RequestContext, status: number): void {
    const seconds = (performance.now() - ctx.startedAt) / 1000
    const key = `${ctx.method} ${status} ${ctx.route}`
    let series = this.series.get(key)
    if (!series) {
      const labels = { method: ctx.method, route: ctx.route, status: String(status) }
      series = { duration: this.duration.labels(labels), count: this.count.labels(labels) }
      this.series.set(key, series)
    }
    series.duration.observe(seconds)
    series.count.inc()
    const line = { reqId: ctx.requestId, method: ctx.method, route: ctx.route, status, ms: Math.round(seconds * 1e5) / 100 }
    if (ctx.quiet) this.log.debug(line, 'request')
    else this.log.info(line, 'request')
    this.inFlight--
    this.settled()
  }

  private handlerDone (): void {
    this.running--
    this.settled()
  }

  private settled (): void {
    if (this.inFlight === 0 && this.running === 0 && this.drained) this.drained()
  }
}
