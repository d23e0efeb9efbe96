import { eventEnvelopeSchema } from './envelope.js'

const EvidenceError = { type: 'object', required: ['status', 'code'], properties: { status: { const: 'error' }, code: { type: 'string' }, details: { type: 'object', additionalProperties: { type: 'string' } } } }
const failure = { $ref: '#/components/schemas/EvidenceError' }
const accepted = { type: 'object', required: ['status', 'event_id', 'media_count'], properties: { status: { const: 'accepted' }, event_id: { type: 'string' }, media_count: { type: 'integer' } } }

export const evidenceOpenApi = {
  tag: { name: 'evidence', description: 'Event evidence: an envelope and its video clips, the clips streamed to object storage' },
  scopes: { 'stream:write': 'submit events of the token\'s own client', 'stream:write:any-client': 'submit events naming another client (subject.client_id)' },
  errorSchema: failure,
  schemas: { EventEnvelope: eventEnvelopeSchema, EvidenceError },
  paths: {
    '/v1/stream/events': {
      post: {
        operationId: 'submitEvent',
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
          202: { description: 'Accepted (or, with Idempotent-Replay, accepted before)', headers: { 'Idempotent-Replay': { $ref: '#/components/headers/Idempotent-Replay' } }, content: { 'application/json': { schema: accepted } } },
          400: { description: 'validation_error, unknown_event_type or checksum_mismatch', content: { 'application/json': { schema: failure } } },
          401: { description: 'Token missing, invalid or expired' },
          403: { description: 'Token lacks stream:write, or its client_id or tenant is no storage identifier (details.authorization), or subject.client_id names another client without stream:write:any-client (details["subject.clientId"])', content: { 'application/json': { schema: failure } } },
          409: { description: 'idempotency_in_progress' },
          413: { description: 'payload_too_large (EVIDENCE_MAX_BYTES)' },
          415: { description: 'Content-Type is not multipart/form-data' },
          503: { description: 'storage_busy, storage_unavailable or bus_unavailable: nothing was accepted; try again after Retry-After' }
        }
      }
    }
  }
}
