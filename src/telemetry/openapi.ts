import { assetTrackingSchema } from './schema.js'

const errorBody = (status: string): object => ({ type: 'object', properties: { status: { const: status }, message: { type: 'string' } } })

export const telemetryOpenApi = {
  schemas: { AssetTrackingData: assetTrackingSchema },
  paths: {
    '/v1/asset/track': {
      post: {
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
    }
  }
}
