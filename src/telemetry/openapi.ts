import { assetTrackingSchema } from './schema.js'

const errorBody = (status: string): object => ({ type: 'object', required: ['status', 'message'], properties: { status: { const: status }, message: { type: 'string' } } })
const TelemetryError = {
  type: 'object',
  required: ['status', 'message'],
  properties: {
    status: { enum: ['validation_error', 'error'] },
    message: { type: 'string' },
    errors: { type: 'object', additionalProperties: { type: 'string' }, description: 'each problem by its field (`gps.latitude`) or header (`xRequestId`): 400 and 413' },
    detail: { type: 'string', description: 'the cause of a 5xx' }
  }
}
const scope = 'asset:track:write'

const batchAnswer = {
  type: 'object',
  properties: {
    status: { enum: ['success', 'partial_success', 'validation_error', 'error'] },
    message: { type: 'string' },
    accepted: { type: 'integer' },
    rejected: { type: 'integer' },
    results: { type: 'array', items: { type: 'object', required: ['index', 'status'], properties: { index: { type: 'integer' }, status: { type: 'string' } } } }
  }
}

/** The routes of asset track; the record's schema accepts these `metrics.schema` values. */
export const telemetryOpenApi = (metricsSchemas: readonly string[]) => ({
  tag: { name: 'telemetry', description: 'Asset track: telemetry records onto the bus, one, many or a stream' },
  scopes: { [scope]: 'publish telemetry records (asset track)' },
  errorSchema: { $ref: '#/components/schemas/TelemetryError' },
  schemas: { AssetTrackingData: assetTrackingSchema(metricsSchemas), TelemetryError },
  paths: {
    '/v1/asset/track': {
      post: {
        operationId: 'trackAsset',
        summary: 'Publish one telemetry record',
        security: [{ bearer: ['asset:track:write'] }],
        parameters: [
          { name: 'X-Request-Id', in: 'header', required: true, schema: { type: 'string', maxLength: 200 } },
          { name: 'X-Request-Timestamp', in: 'header', required: true, schema: { type: 'string', pattern: '^\\d{1,12}$' }, description: 'Unix epoch seconds' }
        ],
        requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/AssetTrackingData' } } } },
        responses: {
          200: { description: 'Published (the broker acknowledged it)', content: { 'application/json': { schema: errorBody('success') } } },
          400: { description: 'Validation failure; `errors` maps each field to its problem', content: { 'application/json': { schema: errorBody('validation_error') } } },
          401: { description: 'Token missing, invalid or expired' },
          403: { description: 'Token lacks asset:track:write' },
          413: { description: 'Body larger than TELEMETRY_MAX_BODY' },
          500: { description: 'Failed to publish message', content: { 'application/json': { schema: errorBody('error') } } },
          503: { description: 'Too many records pending, the bus is known to be down, or the server is draining; see Retry-After' }
        }
      }
    },
    '/v1/asset/track:batch': {
      post: {
        operationId: 'trackAssetBatch',
        summary: 'Publish many telemetry records: a JSON array, or NDJSON (a record a line)',
        security: [{ bearer: ['asset:track:write'] }],
        parameters: [
          { name: 'X-Request-Id', in: 'header', required: true, schema: { type: 'string', maxLength: 200 }, description: 'record i is published with request_id `<X-Request-Id>#<i>`' },
          { name: 'X-Request-Timestamp', in: 'header', required: true, schema: { type: 'string', pattern: '^\\d{1,12}$' }, description: 'Unix epoch seconds' }
        ],
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: { type: 'array', items: { $ref: '#/components/schemas/AssetTrackingData' } } },
            'application/x-ndjson': { schema: { $ref: '#/components/schemas/AssetTrackingData' } }
          }
        },
        responses: {
          200: { description: 'At least one record published; `status` is `success`, or `partial_success` with each refused record\'s error in `results`', content: { 'application/json': { schema: batchAnswer } } },
          400: { description: 'Bad headers or body shape (nothing published), or no record valid (`results` names each one\'s errors)' },
          401: { description: 'Token missing, invalid or expired' },
          403: { description: 'Token lacks asset:track:write' },
          413: { description: 'Body larger than TELEMETRY_BATCH_MAX_BODY, or more than TELEMETRY_BATCH_MAX_RECORDS records' },
          500: { description: 'No record published: every valid one failed to publish (see `results`)' },
          503: { description: 'Nothing published: too many records pending, the bus known to be down, or the server draining; see Retry-After' }
        }
      }
    },
    '/v1/asset/track:stream': {
      get: {
        operationId: 'streamAssetTrack',
        summary: 'Open the telemetry stream (a WebSocket)',
        description: 'An upgrade to a WebSocket whose messages carry records with client sequence numbers, each checked as a one-record request is and acknowledged once the bus has it (docs/telemetry.md). OpenAPI describes the upgrade only.',
        security: [{ bearer: [scope] }],
        parameters: [
          { name: 'X-Stream-Id', in: 'header', required: true, schema: { type: 'string', maxLength: 200 }, description: 'the stream\'s id: records are published with request_id `<X-Stream-Id>#<seq>`' },
          { name: 'Upgrade', in: 'header', required: true, schema: { const: 'websocket' } }
        ],
        responses: {
          101: { description: 'Switching to the WebSocket protocol' },
          400: { description: 'Not a WebSocket upgrade, or no X-Stream-Id' },
          401: { description: 'Token missing, invalid or expired' },
          403: { description: 'Token lacks asset:track:write' },
          429: { description: 'too_many_streams: TELEMETRY_STREAM_PER_CLIENT streams of this client are open' }
        }
      }
    }
  }
})
