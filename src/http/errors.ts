/**
 * The one catalog of error codes. A code's HTTP status lives here and nowhere
 * else; how the body looks is the route's dialect (see error-bodies.ts),
 * because the spec gives each API its own error shape.
 */
export const errorStatus = {
  validation_error: 400,
  invalid_json: 400,
  unknown_event_type: 400,
  checksum_mismatch: 400,
  invalid_request: 400,
  unsupported_grant_type: 400,
  invalid_client: 401,
  unauthorized: 401,
  audience_forbidden: 403,
  forbidden: 403,
  not_a_member: 403,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_in_progress: 409,
  conflict: 409,
  payload_too_large: 413,
  rate_limited: 429,
  publish_failed: 500,
  internal_error: 500,
  bad_gateway: 502,
  overloaded: 503,
  shutting_down: 503
} as const

export type ErrorCode = keyof typeof errorStatus

export interface GatewayErrorOptions {
  /** Field or location → message; rendered as the dialect's `errors`/`details`. */
  details?: Record<string, string>
  headers?: Record<string, string>
  cause?: unknown
}

export class GatewayError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly details: Record<string, string> | undefined
  readonly headers: Record<string, string> | undefined

  constructor (code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'GatewayError'
    this.code = code
    this.status = errorStatus[code]
    this.details = options.details
    this.headers = options.headers
  }
}

export function isGatewayError (err: unknown): err is GatewayError {
  return err instanceof GatewayError
}

/** Anything that is not a GatewayError is a bug or an outage: a 500 that hides internals. */
export function toGatewayError (err: unknown): GatewayError {
  if (isGatewayError(err)) return err
  return new GatewayError('internal_error', 'internal error', { cause: err })
}

/** A 401 that asks for a bearer token, as every token check answers. */
export function unauthorized (message: string, cause?: unknown): GatewayError {
  return new GatewayError('unauthorized', message, { headers: { 'www-authenticate': 'Bearer' }, cause })
}
