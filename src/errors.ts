/**
 * The one catalog of error codes, on the ground floor: any layer may raise a
 * GatewayError, and none but `http/` decides what it looks like on the wire.
 * A code's HTTP status and whether a client may retry it live here and
 * nowhere else; `docs/errors.md` lists the same table (a test holds them together).
 */
export const catalog = {
  validation_error: { status: 400, retryable: false },
  invalid_json: { status: 400, retryable: false },
  unknown_event_type: { status: 400, retryable: false },
  checksum_mismatch: { status: 400, retryable: false },
  invalid_request: { status: 400, retryable: false },
  unsupported_grant_type: { status: 400, retryable: false },
  malformed_request: { status: 400, retryable: false },
  invalid_client: { status: 401, retryable: false },
  unauthorized: { status: 401, retryable: false },
  audience_forbidden: { status: 403, retryable: false },
  forbidden: { status: 403, retryable: false },
  not_a_member: { status: 403, retryable: false },
  not_found: { status: 404, retryable: false },
  method_not_allowed: { status: 405, retryable: false },
  upload_too_slow: { status: 408, retryable: true },
  request_timeout: { status: 408, retryable: true },
  idempotency_in_progress: { status: 409, retryable: true },
  conflict: { status: 409, retryable: false },
  upload_offset_mismatch: { status: 409, retryable: true },
  payload_too_large: { status: 413, retryable: false },
  unsupported_media_type: { status: 415, retryable: false },
  tus_version_unsupported: { status: 412, retryable: false },
  upload_locked: { status: 423, retryable: true },
  rate_limited: { status: 429, retryable: true },
  too_many_streams: { status: 429, retryable: true },
  too_many_uploads: { status: 429, retryable: true },
  header_fields_too_large: { status: 431, retryable: false },
  upload_checksum_mismatch: { status: 460, retryable: false },
  publish_failed: { status: 500, retryable: true },
  internal_error: { status: 500, retryable: true },
  bad_gateway: { status: 502, retryable: true },
  overloaded: { status: 503, retryable: true },
  bus_unavailable: { status: 503, retryable: true },
  storage_busy: { status: 503, retryable: true },
  storage_unavailable: { status: 503, retryable: true },
  shutting_down: { status: 503, retryable: true }
} as const satisfies Record<string, { status: number, retryable: boolean }>

export type ErrorCode = keyof typeof catalog

/**
 * The reasons some answers carry as their text, for a program to match: the
 * harness's and the front door's `detail`, and every route's 401. Each is
 * named here under its code, and `docs/errors.md` lists them (a test holds
 * them together and checks each is raised somewhere). A reason answered
 * with a value after it (`run_not_in_flight:running`) is named without it.
 */
export const reasons = {
  'missing Bearer token': 'unauthorized',
  'empty Bearer token': 'unauthorized',
  'auth_failed:malformed': 'unauthorized',
  'auth_failed:expired': 'unauthorized',
  'auth_failed:wrong_issuer': 'unauthorized',
  'auth_failed:wrong_audience': 'unauthorized',
  'auth_failed:invalid_signature': 'unauthorized',
  'auth_failed:tenant_unresolved': 'unauthorized',
  'auth_failed:revoked': 'unauthorized',
  metrics_token_required: 'unauthorized',
  'not_a_member:org': 'not_a_member',
  'cross_tenant_replay:run': 'forbidden',
  host_not_allowed: 'forbidden',
  origin_not_allowed: 'forbidden',
  invalid_query: 'invalid_request',
  run_not_found: 'not_found',
  route_not_found: 'not_found',
  asset_not_found: 'not_found',
  method_not_allowed: 'method_not_allowed',
  run_not_in_flight: 'conflict',
  runs_in_flight_limit: 'overloaded',
  run_cancel_pending: 'overloaded',
  runs_unavailable: 'overloaded',
  run_owner_unavailable: 'overloaded',
  too_many_streams: 'too_many_streams',
  too_many_reads: 'rate_limited',
  run_storage_limit: 'rate_limited'
} as const satisfies Record<string, ErrorCode>

export type Reason = keyof typeof reasons
export type UnauthorizedReason = { [R in Reason]: typeof reasons[R] extends 'unauthorized' ? R : never }[Reason]

export interface GatewayErrorOptions {
  /** Field or location → message; rendered as the dialect's `errors`/`details`. */
  details?: Record<string, string>
  headers?: Record<string, string>
  cause?: unknown
}

export class GatewayError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly retryable: boolean
  readonly details: Record<string, string> | undefined
  readonly headers: Record<string, string> | undefined

  constructor (code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'GatewayError'
    this.code = code
    this.status = catalog[code].status
    this.retryable = catalog[code].retryable
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

/**
 * The error of `reason`, under its code; `value` follows the reason after a
 * colon (`run_not_in_flight:running`, `method_not_allowed:PUT`).
 */
export function refusal (reason: Reason, options: GatewayErrorOptions & { value?: string } = {}): GatewayError {
  const { value, ...rest } = options
  return new GatewayError(reasons[reason], value === undefined ? reason : `${reason}:${value}`, rest)
}

/** A 401 that asks for a bearer token, as every token check answers. */
export function unauthorized (reason: UnauthorizedReason, cause?: unknown): GatewayError {
  return refusal(reason, { headers: { 'www-authenticate': 'Bearer' }, cause })
}
