import { eventEnvelopeSchema } from './envelope.js'

const EvidenceError = { type: 'object', required: ['status', 'code'], properties: { status: { const: 'error' }, code: { type: 'string' }, details: { type: 'object', additionalProperties: { type: 'string' } } } }
const failure = { $ref: '#/components/schemas/EvidenceError' }
const tusResumable = { name: 'Tus-Resumable', in: 'header', required: true, schema: { const: '1.0.0' }, description: 'The tus version the client speaks; another, or none, is 412 tus_version_unsupported' }
const uploadId = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } }
const integer = (description: string): object => ({ description, schema: { type: 'string', pattern: '^[0-9]+$' } })
const tusHeaders = { 'Tus-Resumable': { description: 'The tus version served', schema: { const: '1.0.0' } } }
const offsetHeaders = { ...tusHeaders, 'Upload-Offset': integer('Bytes stored: every byte received, the whole parts and the bytes past them; go on from here'), 'Upload-Expires': { description: 'When an upload not committed to an event is removed (RFC 9110 date)', schema: { type: 'string' } } }
const tusFailures = {
  401: { description: 'Token missing, invalid or expired' },
  403: { description: 'Token lacks stream:write', content: { 'application/json': { schema: { $ref: '#/components/schemas/EvidenceError' } } } },
  412: { description: 'tus_version_unsupported: Tus-Resumable missing or not 1.0.0', headers: { 'Tus-Version': { schema: { type: 'string' } } } }
}
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
            'application/json': {
              schema: { $ref: '#/components/schemas/EventEnvelope' },
              example: { schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: 'evt-1', occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' }, media: [{ upload_url: '/v1/stream/uploads/0123456789abcdef0123456789abcdef', checksum_sha256: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' }] }
            },
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
          400: { description: 'validation_error, unknown_event_type or checksum_mismatch; for the JSON envelope, an upload_url naming an upload that is not the caller\'s, not finished, expired or committed to another event (details["media[<i>].upload_url"])', content: { 'application/json': { schema: failure } } },
          401: { description: 'Token missing, invalid or expired' },
          403: { description: 'Token lacks stream:write, or its client_id or tenant is no storage identifier (details.authorization), or subject.client_id names another client without stream:write:any-client (details["subject.clientId"])', content: { 'application/json': { schema: failure } } },
          409: { description: 'idempotency_in_progress' },
          413: { description: 'payload_too_large (EVIDENCE_MAX_BYTES)' },
          415: { description: 'Content-Type is neither multipart/form-data nor application/json' },
          503: { description: 'storage_busy, storage_unavailable or bus_unavailable: nothing was accepted; try again after Retry-After' }
        }
      }
    },
    '/v1/stream/uploads': {
      options: {
        operationId: 'describeUploads',
        summary: 'tus: the version, extensions, Tus-Max-Size and checksum algorithms served (no token needed)',
        security: [],
        responses: { 204: { description: 'Described', headers: { ...tusHeaders, 'Tus-Version': { schema: { type: 'string' } }, 'Tus-Extension': { schema: { type: 'string' } }, 'Tus-Max-Size': integer('EVIDENCE_MAX_BYTES'), 'Tus-Checksum-Algorithm': { schema: { type: 'string' } } } } }
      },
      post: {
        operationId: 'createUpload',
        summary: 'tus creation (and creation-with-upload): a resumable upload of one clip',
        security: [{ bearer: ['stream:write'] }],
        parameters: [
          tusResumable,
          { name: 'Upload-Length', in: 'header', required: true, schema: { type: 'integer', minimum: 1 }, description: 'Size of the clip; at most Tus-Max-Size (413). Upload-Defer-Length is refused (400)' },
          { name: 'Upload-Metadata', in: 'header', required: true, schema: { type: 'string' }, description: 'tus metadata; `filetype` (base64 of video/mp4 or video/h264) is required' },
          { name: 'Upload-Checksum', in: 'header', required: false, schema: { type: 'string' }, description: 'With a body: `sha256|sha1 <base64>` of the body' }
        ],
        requestBody: { required: false, content: { 'application/offset+octet-stream': { schema: { type: 'string', format: 'binary' } } } },
        responses: {
          201: { description: 'Created; with a body, Upload-Offset says what of it was stored', headers: { ...offsetHeaders, Location: { description: 'The upload\'s URL (a path)', schema: { type: 'string' } } } },
          400: { description: 'validation_error: Upload-Length missing or 0, Upload-Defer-Length, Upload-Metadata without a video filetype, a malformed Upload-Checksum' },
          ...tusFailures,
          413: { description: 'payload_too_large: Upload-Length over Tus-Max-Size' },
          415: { description: 'A body not sent as application/offset+octet-stream' },
          429: { description: 'too_many_uploads: EVIDENCE_UPLOAD_MAX_OPEN or EVIDENCE_UPLOAD_MAX_BYTES_HELD reached' },
          460: { description: 'upload_checksum_mismatch: the body does not match Upload-Checksum; nothing of it was stored' }
        }
      }
    },
    '/v1/stream/uploads/{id}': {
      head: {
        operationId: 'uploadOffset',
        summary: 'tus: how much of the upload is stored (answers carry no body, errors neither)',
        security: [{ bearer: ['stream:write'] }],
        parameters: [uploadId, tusResumable],
        responses: {
          200: { description: 'The upload', headers: { ...offsetHeaders, 'Upload-Length': integer('Size of the clip'), 'Upload-Metadata': { schema: { type: 'string' } }, 'Cache-Control': { schema: { const: 'no-store' } } } },
          404: { description: 'No such upload of this client (unknown, another client\'s, terminated or expired)' },
          ...tusFailures
        }
      },
      patch: {
        operationId: 'appendUpload',
        summary: 'tus: append bytes at Upload-Offset; every byte received is stored, of a body cut short too (unless it carries Upload-Checksum)',
        security: [{ bearer: ['stream:write'] }],
        parameters: [
          uploadId, tusResumable,
          { name: 'Upload-Offset', in: 'header', required: true, schema: { type: 'integer', minimum: 0 } },
          { name: 'Upload-Checksum', in: 'header', required: false, schema: { type: 'string' }, description: '`sha256|sha1 <base64>` of the body: nothing is stored unless it matches (460)' }
        ],
        requestBody: { required: true, content: { 'application/offset+octet-stream': { schema: { type: 'string', format: 'binary' } } } },
        responses: {
          204: { description: 'Stored up to Upload-Offset', headers: offsetHeaders },
          400: { description: 'validation_error: Upload-Offset missing or malformed, a malformed Upload-Checksum or an algorithm not offered' },
          ...tusFailures,
          404: { description: 'No such upload of this client' },
          409: { description: 'upload_offset_mismatch: Upload-Offset is not the upload\'s (the answer\'s Upload-Offset is)' },
          413: { description: 'payload_too_large: the body runs past Upload-Length' },
          415: { description: 'Content-Type is not application/offset+octet-stream' },
          423: { description: 'upload_locked: another PATCH is writing this upload' },
          460: { description: 'upload_checksum_mismatch: nothing was appended' }
        }
      },
      delete: {
        operationId: 'terminateUpload',
        summary: 'tus termination: the upload and what it stored are removed',
        security: [{ bearer: ['stream:write'] }],
        parameters: [uploadId, tusResumable],
        responses: {
          204: { description: 'Terminated', headers: tusHeaders },
          ...tusFailures,
          404: { description: 'No such upload of this client' },
          409: { description: 'conflict: the upload is committed to an event' },
          423: { description: 'upload_locked: a PATCH is writing it' }
        }
      }
    }
  }
}
