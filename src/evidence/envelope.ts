import { randomUUID } from 'node:crypto'
import { compileSchema, errorMap } from '../validation/index.js'
import { GatewayError } from '../errors.js'

export const BUILTIN_EVENT_TYPES = ['warehouse.restricted_zone.person'] as const
export const EVENT_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'
const unit = { type: 'number', minimum: 0, maximum: 1, 'x-error': 'must be a number between 0 and 1' }
const isoTimestamp = { type: 'string', format: 'iso-date-time', 'x-error': 'must be an ISO 8601 timestamp with a timezone' }

export interface MediaHint {
  ref?: string
  duration_seconds?: number
  checksum_sha256?: string
  source?: 'device' | 'generated'
}

export interface EventEnvelope {
  schema_version: '1.0'
  event_type: string
  event_id: string
  occurred_at: string
  ended_at?: string
  severity?: string
  subject: { device_id: string, client_id?: string, zone_id?: string, [k: string]: unknown }
  detections?: unknown[]
  media?: MediaHint[]
  attributes?: Record<string, unknown>
  [field: string]: unknown
}

/**
 * EventEnvelope. `event_id` is restricted to characters that are safe in an
 * object key, since it becomes part of one. A top-level `client_id` is
 * refused: the tenant comes from the token (an override goes in subject).
 */
export const eventEnvelopeSchema = {
  $id: 'EventEnvelope',
  type: 'object',
  required: ['schema_version', 'event_type', 'occurred_at', 'subject'],
  properties: {
    schema_version: { const: '1.0', 'x-error': 'must be "1.0"' },
    event_type: { type: 'string', minLength: 1 },
    event_id: { type: 'string', pattern: EVENT_ID_PATTERN, 'x-error': 'must be 1 to 128 letters, digits, ".", "_", ":" or "-", starting with a letter or digit' },
    occurred_at: isoTimestamp,
    ended_at: isoTimestamp,
    severity: { enum: ['info', 'warning', 'alert', 'critical'] },
    subject: {
      type: 'object',
      required: ['device_id'],
      properties: { device_id: { type: 'string', minLength: 1 }, client_id: { type: 'string', minLength: 1 }, zone_id: { type: 'string' } }
    },
    detections: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          class: { type: 'string' },
          score: unit,
          bbox: { type: 'array', minItems: 4, maxItems: 4, items: unit, 'x-error': 'must be four numbers [x, y, w, h], each between 0 and 1' }
        }
      }
    },
    media: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          ref: { type: 'string' },
          duration_seconds: { type: 'number', minimum: 0 },
          checksum_sha256: { type: 'string', pattern: '^[0-9a-fA-F]{64}$', 'x-error': 'must be 64 hexadecimal characters' },
          source: { enum: ['device', 'generated'] }
        }
      }
    },
    attributes: { type: 'object' },
    client_id: { not: {}, 'x-error': 'must not be sent: client_id comes from the token (use subject.client_id to override)' }
  }
} as const

const validate = compileSchema<EventEnvelope>(eventEnvelopeSchema)

/**
 * Parses and checks the envelope part. Throws 400 validation_error (all
 * problems at once; a missing event_type is keyed `eventType`) or
 * unknown_event_type. Returns the envelope with an event_id.
 */
export function parseEnvelope (text: string, allowlist: ReadonlySet<string>): EventEnvelope {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new GatewayError('validation_error', 'envelope is not valid JSON', { details: { envelope: 'must be valid JSON' } })
  }
  if (!validate(value)) {
    const details = errorMap(validate.errors)
    if (details['body'] !== undefined) {
      details['envelope'] = details['body']
      delete details['body']
    }
    throw new GatewayError('validation_error', 'envelope is invalid', { details })
  }
  if (!allowlist.has(value.event_type)) {
    throw new GatewayError('unknown_event_type', `event_type ${value.event_type} is not allowed`, { details: { event_type: `${value.event_type} is not in the allowlist` } })
  }
  value.event_id ??= `evt-${randomUUID()}`
  return value
}

export function eventTypeAllowlist (extra: readonly string[]): ReadonlySet<string> {
  return new Set([...BUILTIN_EVENT_TYPES, ...extra])
}
