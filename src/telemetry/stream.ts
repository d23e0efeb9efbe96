import type * as UWS from 'uWebSockets.js'
import type { Logger } from 'pino'
import { Gauge, type Registry } from 'prom-client'
import { CREDENTIAL_CHECK_MS, type TokenClaims, type TokenVerifier } from '../auth/index.js'
import type { MicroBatcher, OutgoingMessage, Settled } from '../bus/index.js'
import { GatewayError, toGatewayError } from '../errors.js'
import { errorBody, parseQuery, statusLine } from '../http/index.js'
import { isoNow } from '../ops/index.js'
import { REQUEST_ID } from '../validation/index.js'
import { recordMessage, recordRequestId } from './batch.js'
import type { RecordChecks } from './record.js'
import { readFrame } from './stream-frame.js'

export const STREAM_PATH = '/v1/asset/track:stream'
/** Close code when the token the stream was opened with expires: log in again, reconnect, resume after the last ack. */
export const TOKEN_EXPIRED = 4401
/** Close code when the server shuts down (RFC 6455's "going away"): reconnect, to this node or another. */
export const GOING_AWAY = 1001
/** Seconds without a frame either way before uWS closes a connection; uWS pings in between. */
const IDLE_TIMEOUT_S = 120
/** Bytes of answers a client may leave unread before it is cut off: a client that does not read its acks. */
const MAX_BACKPRESSURE = 1024 * 1024
/** Longest wait for a draining connection's last acknowledgments before it is closed anyway. */
const DRAIN_MS = 30_000

export interface StreamLimits {
  /** Records a connection may have sent and not yet had acknowledged or refused. */
  windowRecords: number
  /** The bytes of those records; also the largest message. */
  windowBytes: number
  /** Open streams of one principal (issuer and client). */
  perClient: number
  /** Largest record. */
  maxRecord: number
}

/** One open stream: who opened it and what it has in flight. */
interface Connection {
  readonly claims: TokenClaims
  readonly streamId: string
  ws: UWS.WebSocket<Connection> | undefined
  unackedRecords: number
  unackedBytes: number
  /** Acknowledged sequence numbers not yet told, as one range [ackFrom, ackTo]. */
  ackFrom: number
  ackTo: number
  flushQueued: boolean
  /** Set when the connection takes no more records: the close code it ends with once nothing is in flight. */
  closing: { code: number, reason: string, error: GatewayError } | undefined
  closed: boolean
  timers: NodeJS.Timeout[]
}

/** A record of a stream on its way to the bus: the batcher's token. */
class StreamRecord {
  constructor (readonly conn: Connection, readonly seq: number, readonly bytes: number) {}
  get aborted (): boolean {
    return this.conn.closed
  }
}

/**
 * The persistent telemetry stream: a WebSocket on the ingest port, opened
 * with the bearer token and scope of asset track and an `X-Stream-Id`.
 * Each message carries records with client sequence numbers; each record
 * is checked as a one-record request is, published through the same
 * batcher, and acknowledged once the bus has it (docs/telemetry.md).
 */
export class TelemetryStream {
  private readonly connections = new Set<Connection>()
  private readonly perClient = new Map<string, number>()
  private draining = false
  private readonly settled: Settled<StreamRecord>

  constructor (
    private readonly batcher: MicroBatcher,
    private readonly checks: RecordChecks,
    private readonly verifier: TokenVerifier,
    private readonly scope: string,
    private readonly limits: StreamLimits,
    private readonly log: Logger,
    registry?: Registry
  ) {
    const connections = this.connections
    if (registry) new Gauge({ name: 'gateway_telemetry_stream_connections', help: 'Open telemetry streams (WebSocket)', registers: [registry], collect () { this.set(connections.size) } })
    this.settled = (record, err) => { this.recordSettled(record, err) }
  }

  behavior (): UWS.WebSocketBehavior<Connection> {
    return {
      maxPayloadLength: this.limits.windowBytes,
      idleTimeout: IDLE_TIMEOUT_S,
      sendPingsAutomatically: true,
      maxBackpressure: MAX_BACKPRESSURE,
      closeOnBackpressureLimit: true,
      upgrade: (res, req, context) => { this.upgrade(res, req, context) },
      open: ws => { this.open(ws) },
      message: (ws, message) => { this.message(ws.getUserData(), message) },
      close: ws => { this.closed(ws.getUserData()) }
    }
  }

  /** Stops taking streams and records; each connection closes (1001) once its records are acknowledged. */
  close (): void {
    this.draining = true
    for (const conn of this.connections) this.drain(conn, GOING_AWAY, 'server shutting down', new GatewayError('shutting_down', 'server is shutting down'))
  }

  private upgrade (res: UWS.HttpResponse, req: UWS.HttpRequest, context: UWS.us_socket_context_t): void {
    const headers: Record<string, string> = {}
    req.forEach((k, v) => { headers[k] = v })
    const query = req.getQuery() ?? ''
    let aborted = false
    res.onAborted(() => { aborted = true })
    const refuse = (err: unknown): void => {
      if (aborted) return
      const e = toGatewayError(err)
      res.cork(() => {
        res.writeStatus(statusLine(e.status)).writeHeader('content-type', 'application/json')
        if (e.headers) for (const k in e.headers) res.writeHeader(k, e.headers[k]!)
        res.end(JSON.stringify(errorBody('telemetry', e)), true)
      })
    }
    let later = false
    const admit = (claims: TokenClaims): void => {
      if (aborted) return
      if (this.draining) return refuse(new GatewayError('shutting_down', 'server is shutting down', { headers: { 'retry-after': '1' } }))
      try {
        parseQuery(query)
      } catch (err) {
        return refuse(err)
      }
      const streamId = headers['x-stream-id']
      if (streamId === undefined || !REQUEST_ID.test(streamId)) {
        return refuse(new GatewayError('validation_error', 'Validation failed', { details: { xStreamId: streamId === undefined ? 'is required' : 'must be 1 to 200 visible ASCII characters' } }))
      }
      const open = this.perClient.get(claims.tenantKey) ?? 0
      if (open >= this.limits.perClient) {
        return refuse(new GatewayError('too_many_streams', `${open} streams of this client are open already`, { headers: { 'retry-after': '1' }, details: { detail: `at most ${this.limits.perClient} streams per client` } }))
      }
      // Counted from the upgrade on, so that upgrades in flight cannot pass the bound together.
      this.perClient.set(claims.tenantKey, open + 1)
      const conn: Connection = { claims, streamId, ws: undefined, unackedRecords: 0, unackedBytes: 0, ackFrom: -1, ackTo: -1, flushQueued: false, closing: undefined, closed: false, timers: [] }
      const upgrade = (): void => { res.upgrade(conn, headers['sec-websocket-key']!, headers['sec-websocket-protocol'] ?? '', headers['sec-websocket-extensions'] ?? '', context) }
      // After an await, not in res.cork(): uWS's cork, once its callback has upgraded the socket, can read
      // the new WebSocket's bytes as the response's state and close it (uNetworking/uWebSockets#1928, fixed
      // by #1929 after the builds used here). A token checked against IDP_JWKS_URL lost its stream about one
      // time in three so, dropped without a close frame right after `ready`. uWS prints a warning to stderr
      // for the uncorked write; that is the price of a stream that stays open.
      if (later) upgrade()
      else res.cork(upgrade)
    }
    try {
      const claims = this.verifier.verify(headers['authorization'], this.scope)
      if (claims instanceof Promise) {
        later = true
        claims.then(admit, refuse)
      } else admit(claims)
    } catch (err) {
      refuse(err)
    }
  }

  private open (ws: UWS.WebSocket<Connection>): void {
    const conn = ws.getUserData()
    conn.ws = ws
    this.connections.add(conn)
    const { windowRecords, windowBytes } = this.limits
    const expiresAt = (conn.claims.exp ?? 0) * 1000
    ws.send(JSON.stringify({ status: 'ready', stream_id: conn.streamId, window: { records: windowRecords, bytes: windowBytes }, expires_at: new Date(expiresAt).toISOString() }))
    // setTimeout holds at most 2^31 - 1 ms (24.8 days); a longer token is re-checked then.
    const arm = (): void => {
      const left = expiresAt - Date.now()
      if (left <= 0) return this.drain(conn, TOKEN_EXPIRED, 'token expired', new GatewayError('unauthorized', 'token expired: log in again and reconnect'))
      conn.timers.push(setTimeout(arm, Math.min(left, 2 ** 31 - 1)))
    }
    arm()
    // A stream outlives the check at its upgrade: its client removed or rotated, it ends as an expired one does.
    const revoked = (err: unknown): void => this.drain(conn, TOKEN_EXPIRED, 'token revoked', toGatewayError(err))
    conn.timers.push(setInterval(() => {
      try {
        const current = this.verifier.current(conn.claims)
        if (current instanceof Promise) current.catch(revoked)
      } catch (err) {
        revoked(err)
      }
    }, CREDENTIAL_CHECK_MS))
    if (this.draining) this.drain(conn, GOING_AWAY, 'server shutting down', new GatewayError('shutting_down', 'server is shutting down'))
  }

  private closed (conn: Connection): void {
    conn.closed = true
    conn.ws = undefined
    for (const timer of conn.timers) clearTimeout(timer)
    this.connections.delete(conn)
    const open = (this.perClient.get(conn.claims.tenantKey) ?? 1) - 1
    if (open > 0) this.perClient.set(conn.claims.tenantKey, open)
    else this.perClient.delete(conn.claims.tenantKey)
  }

  private message (conn: Connection, data: ArrayBuffer): void {
    // uWS takes the ArrayBuffer back when this returns; the records live until the bus has them.
    const message = Buffer.copyBytesFrom(new Uint8Array(data))
    const frame = readFrame(message)
    if ('errors' in frame) return this.tell(conn, frame.seq, new GatewayError('validation_error', 'Validation failed', { details: frame.errors }))
    const { seq, spans } = frame
    if (conn.closing !== undefined) {
      for (let i = 0; i < spans.length; i++) this.tell(conn, seq + i, conn.closing.error)
      return
    }
    const receivedAt = isoNow()
    const messages: OutgoingMessage[] = []
    const records: StreamRecord[] = []
    let bytes = 0
    for (let i = 0; i < spans.length; i++) {
      const [start, end] = spans[i]!
      const receipt = { clientId: conn.claims.client_id, requestId: recordRequestId(conn.streamId, seq + i), receivedAt, tenantKey: conn.claims.tenantKey }
      const result = recordMessage(this.checks, message.subarray(start, end), receipt, this.limits.maxRecord)
      if (result instanceof GatewayError) this.tell(conn, seq + i, result)
      else {
        messages.push(result)
        records.push(new StreamRecord(conn, seq + i, end - start))
        bytes += end - start
      }
    }
    if (messages.length === 0) return
    let refused: GatewayError | undefined
    if (conn.unackedRecords + messages.length > this.limits.windowRecords || conn.unackedBytes + bytes > this.limits.windowBytes) {
      refused = new GatewayError('overloaded', 'Too many records unacknowledged on this stream; wait for acknowledgments', {
        headers: { 'retry-after': '1' },
        details: { detail: `window of ${this.limits.windowRecords} records and ${this.limits.windowBytes} bytes: ${conn.unackedRecords} records and ${conn.unackedBytes} bytes unacknowledged` }
      })
    } else refused = this.batcher.submitAll(messages, records, this.settled)
    if (refused !== undefined) {
      for (const r of records) this.tell(conn, r.seq, refused)
      return
    }
    conn.unackedRecords += records.length
    conn.unackedBytes += bytes
  }

  private recordSettled (record: StreamRecord, err: GatewayError | undefined): void {
    const conn = record.conn
    conn.unackedRecords--
    conn.unackedBytes -= record.bytes
    if (err !== undefined) this.tell(conn, record.seq, err)
    else if (conn.ackFrom >= 0 && record.seq === conn.ackTo + 1) conn.ackTo = record.seq
    else {
      this.flushAcks(conn)
      conn.ackFrom = conn.ackTo = record.seq
    }
    // A batch settles its records in one loop: their acks go out as one frame after it.
    if (!conn.flushQueued) {
      conn.flushQueued = true
      queueMicrotask(() => {
        conn.flushQueued = false
        this.flushAcks(conn)
        if (conn.closing !== undefined && conn.unackedRecords === 0) this.end(conn)
      })
    }
  }

  private flushAcks (conn: Connection): void {
    if (conn.ackFrom < 0) return
    const text = `{"status":"accepted","from":${conn.ackFrom},"to":${conn.ackTo}}`
    conn.ackFrom = conn.ackTo = -1
    this.send(conn, text)
  }

  /** A record refused or failed (or a message refused, `seq` its first), with the body a one-record request would get. */
  private tell (conn: Connection, seq: number | undefined, err: GatewayError): void {
    this.flushAcks(conn)
    this.send(conn, JSON.stringify(seq === undefined ? errorBody('telemetry', err) : { seq, ...errorBody('telemetry', err) as object }))
  }

  private send (conn: Connection, text: string): void {
    const ws = conn.ws
    if (ws === undefined || conn.closed) return
    ws.cork(() => { ws.send(text) })
  }

  /** Takes no more records on `conn`, which ends with `code` once those in flight are told. */
  private drain (conn: Connection, code: number, reason: string, error: GatewayError): void {
    if (conn.closing !== undefined || conn.closed) return
    conn.closing = { code, reason, error }
    if (conn.unackedRecords === 0) return this.end(conn)
    const timer = setTimeout(() => { this.end(conn) }, DRAIN_MS)
    conn.timers.push(timer)
  }

  private end (conn: Connection): void {
    const ws = conn.ws
    if (ws === undefined || conn.closed || conn.closing === undefined) return
    this.flushAcks(conn)
    this.log.info({ streamId: conn.streamId, clientId: conn.claims.client_id, code: conn.closing.code }, `telemetry stream closed: ${conn.closing.reason}`)
    ws.end(conn.closing.code, conn.closing.reason)
  }
}
