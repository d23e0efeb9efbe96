import { Counter, Histogram, type Registry } from 'prom-client'
import type { TokenClaims, TokenVerifier } from '../auth/index.js'
import { MicroBatcher, type Bus, type BusMessage, type Settled } from '../bus/index.js'
import type { Config } from '../config/index.js'
import { LATER, type Reply, type RequestContext, type Route } from '../http/index.js'
import { GatewayError } from '../errors.js'
import { isoNow } from '../ops/index.js'
import { acceptedAssetId, recordErrors, spliceMessage, toMessage, type AssetTrackingData, type Receipt } from './record.js'

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

/** `POST /v1/asset/track`: authenticate, validate, batch onto the bus, answer on acknowledgment. */
export class TelemetryService {
  private readonly batcher: MicroBatcher
  /** One function answers every record, when its batch is acknowledged or fails. */
  private readonly answer: Settled<RequestContext>

  constructor (private readonly config: Config, bus: Bus, private readonly verifier: TokenVerifier, registry?: Registry) {
    const published = registry && new Counter({ name: 'telemetry_records_total', help: 'Telemetry records accepted (published on the bus)', registers: [registry] })
    // A send's cost is mostly fixed: records per batch is what tells an operator whether batching pays.
    const batches = registry && new Histogram({ name: 'telemetry_batch_records', help: 'Records per bus send of telemetry', buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], registers: [registry] })
    this.answer = (ctx, err) => {
      if (err === undefined) published?.inc()
      ctx.settle(err === undefined ? SUCCESS : undefined, err)
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
      abandoned: ctx => (ctx as RequestContext).aborted
    })
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
    return [track]
  }

  private track (ctx: RequestContext, claims: TokenClaims): typeof LATER {
    const receipt = { clientId: claims.client_id, requestId: ctx.requestId, receivedAt: isoNow(), tenantKey: claims.tenantKey }
    const raw = ctx.rawBody
    const assetId = raw === undefined ? undefined : acceptedAssetId(ctx.headers, raw)
    const message = assetId !== undefined ? spliceMessage(assetId, raw!, receipt) : checkedMessage(ctx, receipt)
    const refused = this.batcher.submit(message, ctx, this.answer)
    if (refused !== undefined) throw refused
    return LATER
  }
}

/** The full path: parse, then name every problem (400) or build the message. */
function checkedMessage (ctx: RequestContext, receipt: Receipt): BusMessage {
  const record = ctx.json()
  const errors = recordErrors(record, ctx.headers, ctx.rawBody)
  if (Object.keys(errors).length > 0) throw new GatewayError('validation_error', 'Validation failed', { details: errors })
  return toMessage(record as AssetTrackingData, ctx.bodyText, receipt)
}
