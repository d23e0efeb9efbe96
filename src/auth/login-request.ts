import { GatewayError } from '../errors.js'
import { jsonTextProblems, snakeToCamel } from '../validation/index.js'

export interface LoginRequest {
  client_id: string
  client_secret: string
  audience: string
  grant_type: 'client_credentials'
}

const FIELDS = ['client_id', 'client_secret', 'audience'] as const
const JSON_TYPE = 'application/json'
const FORM_TYPE = 'application/x-www-form-urlencoded'
export const LOGIN_MEDIA_TYPES = `${JSON_TYPE}, ${FORM_TYPE}`

/**
 * The login body by its Content-Type: JSON (the spec) or form fields (what
 * OAuth 2.0 clients send, RFC 6749 §4.4.2). Anything else, or none, is 415
 * `unsupported_media_type` with `Accept-Post`: a body is read only as what
 * its sender says it is, and a client sending the wrong type learns that,
 * not that its fields are missing. `json` parses the raw body as JSON.
 */
export function loginBody (contentType: string | undefined, raw: Buffer | undefined, json: () => unknown): unknown {
  const type = contentType?.split(';')[0]!.trim().toLowerCase()
  if (type === JSON_TYPE) return jsonFields(raw, json())
  if (type === FORM_TYPE) return formFields(raw?.toString('utf8') ?? '')
  throw new GatewayError('unsupported_media_type', `Content-Type must be ${JSON_TYPE} or ${FORM_TYPE}`, { headers: { 'accept-post': LOGIN_MEDIA_TYPES } })
}

/** Problem keys of jsonTextProblems (the spec's camelCase form) back to the field names a client sends. */
const SENT_NAME: Record<string, string> = Object.fromEntries(['grant_type', ...FIELDS].map(f => [snakeToCamel(f), f]))

/**
 * A JSON body as an object, refused like form fields when a key repeats:
 * JSON.parse keeps the last copy, a proxy or WAF in front may read the
 * first, and a login must mean one thing to both (the ingest routes refuse
 * the same). Nesting past JSON_MAX_DEPTH is refused too.
 */
function jsonFields (raw: Buffer | undefined, value: unknown): unknown {
  if (raw === undefined || typeof value !== 'object' || value === null) return value
  const problems = Object.entries(jsonTextProblems(raw, value))
  if (problems.length > 0) throw new GatewayError('invalid_request', problems.map(([key, message]) => `${SENT_NAME[key] ?? key} ${message}`).join('; '))
  return value
}

/** Form fields as an object; a field given twice is refused (RFC 6749 §3.2: parameters MUST NOT repeat). */
function formFields (text: string): Record<string, string> {
  const fields: Record<string, string> = Object.create(null)
  for (const [name, value] of new URLSearchParams(text)) {
    if (name in fields) throw new GatewayError('invalid_request', `${name} is given more than once`)
    fields[name] = value
  }
  return fields
}

/**
 * Checks a login body (an object: parsed JSON, or form fields).
 * grant_type is checked first, as OAuth 2.0 (RFC 6749 §5.2) reads it first;
 * then every other missing or malformed field is named in one answer.
 */
export function parseLoginRequest (body: unknown): LoginRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', 'request body must be a JSON object')
  }
  const b = body as Record<string, unknown>
  const grant = b['grant_type']
  if (grant === undefined || grant === '') throw new GatewayError('invalid_request', 'grant_type is required')
  if (typeof grant !== 'string') throw new GatewayError('invalid_request', 'grant_type must be a string')
  if (grant !== 'client_credentials') throw new GatewayError('unsupported_grant_type', `grant_type ${JSON.stringify(grant)} is not supported; use client_credentials`)
  const problems: string[] = []
  for (const f of FIELDS) {
    const v = b[f]
    if (v === undefined || v === '') problems.push(`${f} is required`)
    else if (typeof v !== 'string') problems.push(`${f} must be a string`)
  }
  if (problems.length > 0) throw new GatewayError('invalid_request', problems.join('; '))
  return b as unknown as LoginRequest
}
