import type { Logger } from 'pino'
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { TokenClaims, TokenVerifier } from '../auth/index.js'
import { MicroBatcher, type Bus, type BusMessage, type OutgoingMessage, type Settled } from '../bus/index.js'
import type { Config } from '../config/index.js'
import { LATER, type Reply, type RequestContext, type Route } from '../http/index.js'
import { GatewayError } from '../errors.js'
import { isoNow } from '../ops/index.js'
import { arraySpans, ndjsonSpans, type Spans } from './batch-body.js'
import { batchAnswer, recordMessage, recordRequestId, resultText } from './batch.js'
import { TelemetryStream } from './stream.js'
import { headerErrors, recordChecks, spliceMessage, toMessage, type AssetTrackingData, type Receipt, type RecordChecks } from './record.js'

export const TELEMETRY_SCOPE = 'asset:track:write'
/** Serialised once: every accepted record gets these same bytes. */
const SUCCESS: Reply = { status: 200, body: Buffer.from(JSON.stringify({ status: 'success', message: 'message sent successfully' })), headers: { 'content-type': 'application/json' } }

/**
 * The answer while the bus is known to be down: nothing was sent, so a
 * retry is safe, and the client learns at once instead of after the deadline.
 */
function busUnavailable (reason: string): GatewayError {
  return new GatewayError('bus_unavailable', 'Failed to publish message', { headers: { 'retry-after': '1' }, details: { detail: `bus unavailable: ${reason}` } })
}

const NDJSON_TYPE = /^application\/(x-ndjson|jsonl)\s*(;|$)/i
const ARRAY_TYPE = /^application\/json\s*(;|$)/i

/** One request of `POST /v1/asset/track:batch`: the results of its records as they settle. */
class BatchRequest {
  readonly results: string[]
  readonly failures: GatewayError[] = []
  remaining = 0
  constructor (readonly ctx: RequestContext, count: number) {
    this.results = new Array<string>(count)
  }

  /** Sets record `index`'s result; answers the request with the last one. */
  settle (index: number, err: GatewayError | undefined): void {
    this.results[index] = resultText(index, err)
    if (err !== undefined) this.failures.push(err)
    if (--this.remaining === 0) this.ctx.settle(batchAnswer(this.results, this.failures))
  }
}

/** A queued record of a batch: the batcher's token, gone with its request's client. */
class BatchRecord {
  constructor (readonly request: BatchRequest, readonly index: number) {}
  get aborted (): boolean {
    return this.request.ctx.aborted
  }
}

/** A bus token whose sender may have left: a request, a record of a batch or of a stream. */
interface Sender { readonly aborted: boolean }

/**
 * `POST /v1/asset/track` and `/v1/asset/track:batch`: authenticate, validate,
 * batch onto the bus, answer on acknowledgment.
 */
export class TelemetryService {
  readonly batcher: MicroBatcher
  /** One function answers every record, when its batch is acknowledged or fails. */
  private readonly answer: Settled<RequestContext>
  private readonly answerBatchRecord: Settled<BatchRecord>
  private readonly checks: RecordChecks

  constructor (private readonly config: Config, bus: Bus, private readonly verifier: TokenVerifier, registry?: Registry) {
    this.checks = recordChecks(config.telemetryMetricsSchemas)
    const published = registry && new Counter({ name: 'gateway_telemetry_records_total', help: 'Telemetry records accepted (published on the bus)', registers: [registry] })
    // A send's cost is mostly fixed: records per batch is what tells an operator whether batching pays.
    const batches = registry && new Histogram({ name: 'gateway_telemetry_batch_records', help: 'Records per bus send of telemetry', buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], registers: [registry] })
    this.answer = (ctx, err) => {
      if (err === undefined) published?.inc()
      ctx.settle(err === undefined ? SUCCESS : undefined, err)
    }
    this.answerBatchRecord = (record, err) => {
      if (err === undefined) published?.inc()
      record.request.settle(record.index, err)
    }
    this.batcher = new MicroBatcher({
      maxBatch: config.telemetryBatchMax,
      lingerMs: config.telemetryLingerMs,
      maxPending: config.telemetryMaxPending,
      timeoutMs: config.telemetryPublishTimeoutMs,
      maxInFlight: bus.maxInFlight,
      publish: messages => {
        batches?.observe(messages.length)
        return bus.publish(config.topicTelemetry, messages)
      },
      refuse: () => {
        const reason = bus.unavailable(config.topicTelemetry)
        return reason === undefined ? undefined : busUnavailable(reason)
      },
      abandoned: token => (token as Sender).aborted
    })
    if (registry) {
      const batcher = this.batcher
      // The ratio of the two is how close asset track is to its 503s (`overloaded`).
      new Gauge({ name: 'gateway_telemetry_records_pending', help: 'Telemetry records queued or sent and not yet acknowledged by the bus (503 past TELEMETRY_MAX_PENDING)', registers: [registry], collect () { this.set(batcher.pending) } })
      new Gauge({ name: 'gateway_telemetry_records_pending_limit', help: 'TELEMETRY_MAX_PENDING: pending records past which asset track answers 503', registers: [registry] }).set(config.telemetryMaxPending)
    }
  }

  /** The stream (stream.ts), on the same batcher as the routes. */
  stream (log: Logger, registry?: Registry): TelemetryStream {
    return new TelemetryStream(this.batcher, this.checks, this.verifier, TELEMETRY_SCOPE, {
      windowRecords: this.config.telemetryStreamWindowRecords,
      windowBytes: this.config.telemetryStreamWindowBytes,
      perClient: this.config.telemetryStreamPerClient,
      maxRecord: this.config.telemetryMaxBody
    }, log, registry)
  }

  routes (): Route[] {
    const track: Route<TokenClaims> = {
      method: 'POST',
      path: '/v1/asset/track',
      body: 'json',
      bodyLimit: this.config.telemetryMaxBody,
      errors: 'telemetry',
      authorize: ctx => this.verifier.verify(ctx.headers['authorization'], TELEMETRY_SCOPE),
      handler: (ctx, claims) => this.track(ctx, claims)
    }
    const batch: Route<TokenClaims> = {
      method: 'POST',
      path: '/v1/asset/track:batch',
      body: 'json',
      bodyLimit: this.config.telemetryBatchMaxBody,
      errors: 'telemetry',
      authorize: ctx => this.verifier.verify(ctx.headers['authorization'], TELEMETRY_SCOPE),
      handler: (ctx, claims) => this.trackBatch(ctx, claims)
    }
    return [track, batch]
  }

  /**
   * Every record of the body checked alone; the valid ones queued together
   * (or the request refused whole: nothing is published from it), the
   * answer given once each has its result.
   */
  private trackBatch (ctx: RequestContext, claims: TokenClaims): Reply | typeof LATER {
    const raw = ctx.rawBody ?? Buffer.alloc(0)
    const spans = batchSpans(ctx.headers, raw, this.config.telemetryBatchMaxRecords)
    const receivedAt = isoNow()
    const request = new BatchRequest(ctx, spans.length)
    const messages: OutgoingMessage[] = []
    const tokens: BatchRecord[] = []
    for (let i = 0; i < spans.length; i++) {
      const [start, end] = spans[i]!
      const receipt = { clientId: claims.client_id, requestId: recordRequestId(ctx.requestId, i), receivedAt, tenantKey: claims.tenantKey }
      const result = recordMessage(this.checks, raw.subarray(start, end), receipt, this.config.telemetryMaxBody)
      if (result instanceof GatewayError) {
        request.results[i] = resultText(i, result)
        request.failures.push(result)
      } else {
        messages.push(result)
        tokens.push(new BatchRecord(request, i))
      }
    }
    if (messages.length === 0) return batchAnswer(request.results, request.failures)
    request.remaining = messages.length
    const refused = this.batcher.submitAll(messages, tokens, this.answerBatchRecord)
    if (refused !== undefined) throw refused
    return LATER
  }

  private track (ctx: RequestContext, claims: TokenClaims): typeof LATER {
    const receipt = { clientId: claims.client_id, requestId: ctx.requestId, receivedAt: isoNow(), tenantKey: claims.tenantKey }
    const raw = ctx.rawBody
    const assetId = raw === undefined ? undefined : this.checks.acceptedAssetId(ctx.headers, raw)
    const message = assetId !== undefined ? spliceMessage(assetId, raw!, receipt) : checkedMessage(this.checks, ctx, receipt)
    const refused = this.batcher.submit(message, ctx, this.answer)
    if (refused !== undefined) throw refused
    return LATER
  }
}

/**
 * Where the records of a batch body are, or the error that refuses the
 * request whole: headers as a one-record request's, an NDJSON or JSON
 * array body, 1 to `maxRecords` records.
 */
function batchSpans (headers: Readonly<Record<string, string>>, raw: Buffer, maxRecords: number): Spans {
  const type = headers['content-type'] ?? ''
  const ndjson = NDJSON_TYPE.test(type)
  const errors = headerErrors({ ...headers, 'content-type': ndjson ? 'application/json' : type })
  if (errors['contentType'] !== undefined) errors['contentType'] = 'must be application/json (an array of records) or application/x-ndjson (a record a line)'
  if (Object.keys(errors).length > 0) throw new GatewayError('validation_error', 'Validation failed', { details: errors })
  const spans = ndjson ? ndjsonSpans(raw) : ARRAY_TYPE.test(type) ? arraySpans(raw) : undefined
  if (spans === undefined) throw new GatewayError('invalid_json', 'request body is not a JSON array', { details: { body: 'must be a JSON array of records' } })
  if (spans.length === 0) throw new GatewayError('validation_error', 'Validation failed', { details: { body: 'must hold at least one record' } })
  if (spans.length > maxRecords) {
    throw new GatewayError('payload_too_large', `batch holds more than ${maxRecords} records`, { details: { body: `must hold at most ${maxRecords} records` } })
  }
  return spans
}

/** The full path: parse, then name every problem (400) or build the message. */
function checkedMessage (checks: RecordChecks, ctx: RequestContext, receipt: Receipt): BusMessage {
  const record = ctx.json()
  const errors = checks.recordErrors(record, ctx.headers, ctx.rawBody)
  if (Object.keys(errors).length > 0) throw new GatewayError('validation_error', 'Validation failed', { details: errors })
  return toMessage(record as AssetTrackingData, ctx.bodyText, receipt)
}
