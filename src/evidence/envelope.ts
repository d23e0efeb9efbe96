import { randomUUID } from 'node:crypto'
import { compileSchema, errorMap, jsonTextProblems, labelProblem, STORAGE_ID_PATTERN, STORAGE_ID_RULE } from '../validation/index.js'
import { GatewayError } from '../errors.js'

export const BUILTIN_EVENT_TYPES = ['warehouse.restricted_zone.person'] as const
/** The scope that lets a caller publish under another client_id (`subject.client_id`). */
export const ANY_CLIENT_SCOPE = 'stream:write:any-client'
const storageId = { type: 'string', pattern: STORAGE_ID_PATTERN, 'x-error': STORAGE_ID_RULE }
const unit = { type: 'number', minimum: 0, maximum: 1, 'x-error': 'must be a number between 0 and 1' }
const isoTimestamp = { type: 'string', format: 'iso-date-time', 'x-error': 'must be an ISO 8601 timestamp with a timezone' }

export interface MediaHint {
  ref?: string
  duration_seconds?: number
  checksum_sha256?: string
  source?: 'device' | 'generated'
  /** The tus upload holding the clip, when the envelope is sent alone (application/json). */
  upload_url?: string
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
 * EventEnvelope. `event_id` becomes part of an object key and
 * `subject.client_id` of the bus key and a header, so both are storage
 * identifiers; `subject.device_id` is a label (checked in parseEnvelope).
 * A top-level `client_id` is refused: the tenant comes from the token (an
 * override goes in subject). docs/identifiers.md has the grammars.
 */
export const eventEnvelopeSchema = {
  $id: 'EventEnvelope',
  type: 'object',
  required: ['schema_version', 'event_type', 'occurred_at', 'subject'],
  properties: {
    schema_version: { const: '1.0', 'x-error': 'must be "1.0"' },
    event_type: { type: 'string', minLength: 1 },
    event_id: storageId,
    occurred_at: isoTimestamp,
    ended_at: isoTimestamp,
    severity: { enum: ['info', 'warning', 'alert', 'critical'] },
    subject: {
      type: 'object',
      required: ['device_id'],
      properties: { device_id: { type: 'string' }, client_id: storageId, zone_id: { type: 'string' } }
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
          source: { enum: ['device', 'generated'] },
          upload_url: { type: 'string', minLength: 1, maxLength: 2048 }
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
 *
 * The envelope is published re-serialised, so it is held to what
 * serialises back to what was validated: no nesting past JSON_MAX_DEPTH
 * (deeper overflows JSON.stringify's recursion: a 500, found by the attack
 * suite), no number JSON cannot hold (`1e309` would be published as null),
 * no key twice (the value kept would be the parser's choice).
 */
export function parseEnvelope (text: string, allowlist: ReadonlySet<string>): EventEnvelope {
  const value = parseJson(text)
  const textProblems = jsonTextProblems(Buffer.from(text), value)
  if (Object.keys(textProblems).length > 0) throw new GatewayError('validation_error', 'envelope is invalid', { details: renameBody(textProblems) })
  const valid = validate(value)
  const details = valid ? {} : renameBody(errorMap(validate.errors))
  const deviceId = (value as { subject?: { device_id?: unknown } } | null)?.subject?.device_id
  const deviceProblem = typeof deviceId === 'string' ? labelProblem(deviceId) : undefined
  if (deviceProblem !== undefined) details['subject.deviceId'] ??= deviceProblem
  if (!valid || deviceProblem !== undefined) throw new GatewayError('validation_error', 'envelope is invalid', { details })
  if (!allowlist.has(value.event_type)) {
    throw new GatewayError('unknown_event_type', `event_type ${value.event_type} is not allowed`, { details: { event_type: `${value.event_type} is not in the allowlist` } })
  }
  value.event_id ??= `evt-${randomUUID()}`
  return value
}

/** A problem of the whole envelope is keyed `envelope`, as the part is named. */
function renameBody (details: Record<string, string>): Record<string, string> {
  if (details['body'] !== undefined) {
    details['envelope'] = details['body']
    delete details['body']
  }
  return details
}

function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new GatewayError('validation_error', 'envelope is not valid JSON', { details: { envelope: 'must be valid JSON' } })
  }
}

/**
 * The client_id an envelope is published under: the caller's, or
 * `subject.client_id` when it names another client and the caller holds
 * ANY_CLIENT_SCOPE (a gateway or bridge that uploads for many clients).
 * Anyone else naming another client is refused with 403 `forbidden` before
 * anything is stored, so no client publishes evidence keyed as another.
 * Naming oneself is no override and always allowed.
 */
export function publishingClientId (envelope: EventEnvelope, callerClientId: string, callerScopes: string): string {
  const named = envelope.subject.client_id
  if (named === undefined || named === callerClientId) return callerClientId
  if (!callerScopes.split(' ').includes(ANY_CLIENT_SCOPE)) {
    throw new GatewayError('forbidden', `publishing as another client needs scope ${ANY_CLIENT_SCOPE}`, { details: { 'subject.clientId': `may name only the token's own client_id without scope ${ANY_CLIENT_SCOPE}` } })
  }
  return named
}

export function eventTypeAllowlist (extra: readonly string[]): ReadonlySet<string> {
  return new Set([...BUILTIN_EVENT_TYPES, ...extra])
}
