import { GatewayError } from '../errors.js'

export interface LoginRequest {
  client_id: string
  client_secret: string
  audience: string
  grant_type: 'client_credentials'
}

const FIELDS = ['client_id', 'client_secret', 'audience'] as const

/**
 * Checks a login body (JSON object, or form fields as OAuth clients send them).
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
