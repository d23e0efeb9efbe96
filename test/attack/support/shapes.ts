import { catalog } from '../../../src/errors.js'
import type { Answer } from './wire.js'

/**
 * The error body each API of the spec gives (docs/errors.md,
 * src/http/error-bodies.ts), checked from the outside: what a refused
 * request must look like on its route, whatever made it wrong.
 */
export type Dialect = 'oauth' | 'telemetry' | 'evidence' | 'harness' | 'plain'

/** The spec's 401 details on the harness (and the front door, which uses its strings). */
export const HARNESS_401 = new Set([
  'missing Bearer token', 'empty Bearer token', 'auth_failed:malformed', 'auth_failed:invalid_signature',
  'auth_failed:expired', 'auth_failed:wrong_issuer', 'auth_failed:wrong_audience', 'auth_failed:tenant_unresolved',
  // Beside the spec's: a token of a client removed or rotated since (docs/auth.md).
  'auth_failed:revoked'
])

const OAUTH_ERRORS = new Set(['invalid_request', 'unsupported_grant_type', 'access_denied', 'slow_down', 'temporarily_unavailable'])

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const stringMap = (v: unknown): boolean => isObject(v) && Object.values(v).every(x => typeof x === 'string')
const keys = (v: Record<string, unknown>): string => Object.keys(v).sort().join(',')

/** What is wrong with a 4xx or 5xx answer's body for `dialect`, or undefined when it is the spec's shape. */
export function errorShapeProblem (dialect: Dialect, answer: Answer): string | undefined {
  const body = answer.json
  const status = answer.status
  if (!isObject(body)) return `not a JSON object: ${answer.text.slice(0, 200)}`
  switch (dialect) {
    case 'oauth':
      if (keys(body) !== 'error,error_description' || typeof body['error_description'] !== 'string') return 'not {error, error_description}'
      if (!OAUTH_ERRORS.has(body['error'] as string)) return `error ${String(body['error'])} is not an OAuth error code`
      return undefined
    case 'telemetry':
      if (status === 400 || status === 413) {
        if (body['status'] !== 'validation_error' || typeof body['message'] !== 'string' || !stringMap(body['errors'])) return 'not {status: validation_error, message, errors}'
        return undefined
      }
      if (status >= 500) return body['status'] === 'error' && typeof body['message'] === 'string' && typeof body['detail'] === 'string' ? undefined : 'not {status: error, message, detail}'
      return keys(body) === 'message,status' && body['status'] === 'error' && typeof body['message'] === 'string' ? undefined : 'not {status: error, message}'
    case 'evidence':
      if (keys(body) !== 'code,details,status' || body['status'] !== 'error' || !stringMap(body['details'])) return 'not {status: error, code, details}'
      return codeProblem(body['code'], status)
    case 'harness':
      if (keys(body) !== 'detail' || typeof body['detail'] !== 'string') return 'not {detail}'
      if (status === 401 && !HARNESS_401.has(body['detail'])) return `401 detail ${body['detail']} is not one of the spec's`
      // Beside the spec's: a browser's request from another origin, or by a rebound name (docs/harness.md).
      if (status === 403 && !/^(cross_tenant_replay:run|not_a_member:org|origin_not_allowed$|host_not_allowed$)/.test(body['detail'])) return `403 detail ${body['detail']} is not one of the spec's`
      return undefined
    case 'plain':
      if (keys(body) !== 'code,message,status' || body['status'] !== 'error' || typeof body['message'] !== 'string') return 'not {status: error, code, message}'
      return codeProblem(body['code'], status)
  }
}

function codeProblem (code: unknown, status: number): string | undefined {
  const entry = catalog[code as keyof typeof catalog]
  if (entry === undefined) return `code ${String(code)} is not in the catalog`
  return entry.status === status ? undefined : `code ${String(code)} is ${entry.status} in the catalog, answered ${status}`
}
