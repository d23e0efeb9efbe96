import { eventEnvelopeSchema } from './envelope.js'

const failure = { type: 'object', properties: { status: { const: 'error' }, code: { type: 'string' }, details: { type: 'object', additionalProperties: { type: 'string' } } } }

export const evidenceOpenApi = {
  schemas: { EventEnvelope: eventEnvelopeSchema },
  paths: {
    '/v1/stream/events': {
      post: {
        summary: 'Submit an event envelope with 0..N video clips',
        security: [{ bearer: ['stream:write'] }],
        parameters: [{ name: 'X-Request-Id', in: 'header', required: false, schema: { type: 'string' } }],
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['envelope'],
                properties: { envelope: { $ref: '#/components/schemas/EventEnvelope' }, media: { type: 'array', items: { type: 'string', format: 'binary' } } }
              },
              encoding: { envelope: { contentType: 'application/json' }, media: { contentType: 'video/mp4, video/h264' } }
            }
          }
        },
        responses: {
          202: { description: 'Accepted; header Idempotent-Replay: true on a replay', content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'accepted' }, event_id: { type: 'string' }, media_count: { type: 'integer' } } } } } },
          400: { description: 'validation_error, unknown_event_type or checksum_mismatch', content: { 'application/json': { schema: failure } } },
          401: { description: 'Token missing, invalid or expired' },
          403: { description: 'Token lacks stream:write, or its client_id or tenant is no storage identifier (details.authorization), or subject.client_id names another client without stream:write:any-client (details["subject.clientId"])', content: { 'application/json': { schema: failure } } },
          409: { description: 'idempotency_in_progress' },
          413: { description: 'payload_too_large (EVIDENCE_MAX_BYTES)' }
        }
      }
    }
  }
}
