import type { GatewayError } from '../errors.js'

/**
 * Each API in the spec has its own error body. A route names its dialect and
 * this file is the only place that turns a GatewayError into a body.
 */
export type ErrorDialect = 'oauth' | 'telemetry' | 'evidence' | 'harness' | 'plain'

const oauthError: Partial<Record<GatewayError['code'], string>> = {
  invalid_json: 'invalid_request',
  validation_error: 'invalid_request',
  malformed_request: 'invalid_request',
  header_fields_too_large: 'invalid_request',
  payload_too_large: 'invalid_request',
  request_timeout: 'invalid_request',
  unsupported_media_type: 'invalid_request',
  invalid_client: 'access_denied',
  audience_forbidden: 'access_denied',
  rate_limited: 'slow_down',
  overloaded: 'temporarily_unavailable'
}

export function errorBody (dialect: ErrorDialect, err: GatewayError): unknown {
  switch (dialect) {
    case 'oauth':
      return { error: oauthError[err.code] ?? err.code, error_description: err.message }
    case 'telemetry':
      if (err.status === 400 || err.status === 413) {
        return { status: 'validation_error', message: err.message, errors: err.details ?? {} }
      }
      if (err.status >= 500) {
        return { status: 'error', message: err.message, detail: err.details?.['detail'] ?? err.code }
      }
      return { status: 'error', message: err.message }
    case 'evidence':
      return { status: 'error', code: err.code, details: err.details ?? { request: err.message } }
    case 'harness':
      return { detail: err.message }
    case 'plain':
      return { status: 'error', code: err.code, message: err.message }
  }
}
