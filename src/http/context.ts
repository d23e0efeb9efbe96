import { randomUUID } from 'node:crypto'
import type { HttpResponse, HttpRequest } from 'uWebSockets.js'
import { BodyAbortedError, type BodyReader } from './body.js'
import { GatewayError } from '../errors.js'
import { REQUEST_ID, jsonTextProblems } from '../validation/index.js'
import type { ErrorDialect } from './error-bodies.js'
import { HEADER_LINE_BYTES, SINGLE_VALUED, headerIssue, requestLineBytes, type HeaderIssue } from './framing.js'
import type { Exchange, Intake } from './intake.js'
import { statusLine } from './status.js'

export type Headers = Readonly<Record<string, string>>

export interface Reply {
  status: number
  body?: unknown
  headers?: Record<string, string>
}

/** What a forwarded request looks like to the route it is forwarded to (RequestContext.forwardAs). */
export interface ForwardedView {
  path: string
  query: string
  headers: Headers
  params: Record<string, string>
}

/** Status logged for a request whose client went away before the answer. */
export const CLIENT_CLOSED = 499

/**
 * What a handler returns when it answers later, through ctx.settle(): a
 * request waiting on a shared event (its batch's acknowledgment) then needs
 * no promise and no closure of its own.
 */
export const LATER: unique symbol = Symbol('answered later')

/** Where ctx.settle() goes: the server's own answer path. */
export type Settle = (ctx: RequestContext, reply: Reply | undefined, err: unknown) => void

/**
 * One request. Everything uWS gives on the stack (method, url, headers) is
 * copied here in the synchronous part of the handler, because HttpRequest is
 * gone after the first await.
 */
export class RequestContext implements Exchange {
  readonly method: string
  readonly path: string
  readonly query: string
  readonly headers: Headers
  readonly requestId: string
  readonly startedAt = performance.now()
  /** What is wrong with the headers themselves (framing, duplicates, size), found before any route runs. */
  readonly headerIssue: HeaderIssue | undefined
  /** Content-Length, when given (and well-formed). */
  readonly declaredLength: number | undefined
  /** The request says a body follows (Content-Length above 0, or chunked). */
  readonly hasBody: boolean
  params: Record<string, string> = {}
  route = 'unmatched'
  quiet = false
  dialect: ErrorDialect = 'plain'
  /** The whole body, for `body: 'json'` routes; parse it with json(). */
  rawBody: Buffer | undefined = undefined
  /** The body of `body: 'stream'` routes, read as it arrives. */
  stream: BodyReader | undefined = undefined
  /** Where the body's bytes go, when there is a body. */
  intake: Intake<unknown> | undefined = undefined
  /** An answer was decided: sent, or waiting for the rest of the body. */
  answered = false
  private parsed: { value: unknown } | undefined
  private text: string | undefined
  private state: 'open' | 'streaming' | 'done' | 'aborted' = 'open'
  private streamStatus = 200
  private paused = false
  private address: string | undefined
  private controller: AbortController | undefined
  private readonly abortHandlers: Array<() => void> = []
  private settleTo: Settle | undefined
  private early: { reply: Reply | undefined, err: unknown } | undefined
  private settled = false
  private forwarded = false

  constructor (readonly res: HttpResponse, req: HttpRequest, private readonly onFinish: (ctx: RequestContext, status: number) => void) {
    this.method = req.getCaseSensitiveMethod()
    this.path = req.getUrl()
    this.query = req.getQuery() ?? ''
    const headers: Record<string, string> = Object.create(null)
    let duplicate: string | undefined
    let bytes = requestLineBytes(this.method, this.path, this.query)
    req.forEach((k, v) => {
      if (headers[k] !== undefined && duplicate === undefined && SINGLE_VALUED.has(k)) duplicate = k
      headers[k] = v
      bytes += k.length + v.length + HEADER_LINE_BYTES
    })
    this.headers = headers
    this.headerIssue = headerIssue(headers, duplicate, bytes)
    const length = headers['content-length']
    this.declaredLength = length === undefined || this.headerIssue?.framing === true ? undefined : Number(length)
    this.hasBody = this.declaredLength === undefined ? headers['transfer-encoding'] !== undefined : this.declaredLength > 0
    const given = headers['x-request-id']
    this.requestId = given !== undefined && REQUEST_ID.test(given) ? given : randomUUID()
  }

  /**
   * Makes this request look, to a route of another server in this process,
   * as the request that route would have been sent: its path, query,
   * headers and path parameters. Only the front door calls it, once, after
   * its own checks, so that it serves the harness's route in-process
   * (serveLocal) instead of opening a loopback connection per request. The
   * fields stay read-only to every route: this is their one rewrite, before
   * the other route sees the request, and never again.
   */
  forwardAs (view: ForwardedView): void {
    if (this.forwarded) throw new Error('a request is forwarded once')
    this.forwarded = true
    const self = this as { path: string, query: string, headers: Headers }
    self.path = view.path
    self.query = view.query
    self.headers = view.headers
    this.params = view.params
  }

  /** The peer address, read on first use: most routes never need it. */
  get remoteAddress (): string {
    if (this.address === undefined) this.address = this.live ? Buffer.from(this.res.getRemoteAddressAsText()).toString() : ''
    return this.address
  }

  /**
   * The body parsed as JSON (undefined when empty). Parsing waits until the
   * handler asks, so it can check the caller's token first, or read the
   * bytes without it.
   */
  json (): unknown {
    if (this.parsed === undefined) {
      const text = this.bodyText
      let value: unknown
      if (text !== '') {
        try {
          value = JSON.parse(text)
        } catch {
          throw new GatewayError('invalid_json', 'request body is not valid JSON', { details: { body: 'must be valid JSON' } })
        }
      }
      this.parsed = { value }
    }
    return this.parsed.value
  }

  /**
   * json() held to the one JSON policy (jsonTextProblems: no key twice, no
   * integer past int64, no lone surrogate, no ±Infinity, bounded nesting),
   * for a route that takes the value as it is: a 400 `validation_error`
   * naming each problem. Routes that name problems with their own (telemetry,
   * login, the evidence envelope) call jsonTextProblems themselves.
   */
  checkedJson (): unknown {
    const value = this.json()
    if (value === undefined || this.rawBody === undefined) return value
    const problems = jsonTextProblems(this.rawBody, value)
    const named = Object.entries(problems)
    if (named.length > 0) throw new GatewayError('validation_error', named.map(([key, message]) => `${key} ${message}`).join('; '), { details: problems })
    return value
  }

  /** The body as UTF-8 text, decoded once for json() and the handler. */
  get bodyText (): string {
    this.text ??= this.rawBody === undefined ? '' : this.rawBody.toString('utf8')
    return this.text
  }

  /**
   * The answer of a handler that returned LATER: `reply`, or `err` mapped to
   * its response as a thrown error would be. Only the first call counts; one
   * made before the handler has returned is kept until it has.
   */
  settle (reply: Reply | undefined, err?: unknown): void {
    if (this.settled) return
    this.settled = true
    if (this.settleTo !== undefined) this.settleTo(this, reply, err)
    else this.early = { reply, err }
  }

  /** Called by the server when the handler returned LATER. */
  answerLater (to: Settle): void {
    const early = this.early
    if (early !== undefined) {
      this.early = undefined
      to(this, early.reply, early.err)
    } else this.settleTo = to
  }

  get aborted (): boolean {
    return this.state === 'aborted'
  }

  /** True while the response can still be written. */
  get live (): boolean {
    return this.state === 'open' || this.state === 'streaming'
  }

  /** Aborted when the client disconnects; pass it to any work the request starts. */
  get signal (): AbortSignal {
    this.controller ??= new AbortController()
    if (this.aborted) this.controller.abort()
    return this.controller.signal
  }

  onAbort (handler: () => void): void {
    this.abortHandlers.push(handler)
  }

  get readingPaused (): boolean {
    return this.paused
  }

  /** Stops reading the socket (a no-op once the response is over). */
  pause (): void {
    if (this.paused || !this.live) return
    this.paused = true
    this.res.pause()
  }

  resume (): void {
    if (!this.paused || !this.live) return
    this.paused = false
    this.res.resume()
  }

  /** Wired to uWS onAborted. */
  abort (): void {
    if (!this.live) return
    this.state = 'aborted'
    this.stream?.destroy(new BodyAbortedError())
    this.intake?.close()
    this.controller?.abort()
    for (const h of this.abortHandlers) h()
    this.onFinish(this, CLIENT_CLOSED)
  }

  send (status: number, body?: unknown, headers?: Record<string, string>, closeConnection = false): void {
    if (this.state !== 'open') return
    this.state = 'done'
    let payload: string | Buffer | undefined
    let contentType: string | undefined
    if (body === undefined) payload = undefined
    else if (typeof body === 'string') { payload = body; contentType = 'text/plain; charset=utf-8' } else if (Buffer.isBuffer(body)) payload = body
    else { payload = JSON.stringify(body); contentType = 'application/json' }
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status)).writeHeader('x-request-id', this.requestId)
      if (contentType !== undefined && headers?.['content-type'] === undefined) this.res.writeHeader('content-type', contentType)
      if (headers) for (const k in headers) this.res.writeHeader(k, headers[k]!)
      this.res.end(payload, closeConnection)
    })
    this.onFinish(this, status)
  }

  /** Starts a streamed response (SSE, proxy). Follow with write() and end(). */
  writeHead (status: number, headers: Record<string, string>): void {
    if (this.state !== 'open') return
    this.state = 'streaming'
    this.streamStatus = status
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status)).writeHeader('x-request-id', this.requestId)
      for (const k in headers) this.res.writeHeader(k, headers[k]!)
    })
  }

  /** Writes a chunk; false means the socket is backed up: wait for onWritable. */
  write (chunk: string | Buffer): boolean {
    if (this.state !== 'streaming') return false
    let ok = false
    this.res.cork(() => { ok = this.res.write(chunk) })
    return ok
  }

  onWritable (handler: () => boolean): void {
    this.res.onWritable(() => this.live ? handler() : true)
  }

  end (chunk?: string | Buffer): void {
    if (this.state !== 'streaming') return
    this.state = 'done'
    this.res.cork(() => { this.res.end(chunk) })
    this.onFinish(this, this.streamStatus)
  }
}
