import { GatewayError } from '../errors.js'

export const MAX_MESSAGE_BYTES = 64 * 1024

export interface RunRequest {
  message: string
  mode: string
  options: Record<string, unknown>
}

const bad = (detail: string): GatewayError => new GatewayError('validation_error', detail)

/**
 * A run request: `message` (string, at most 64 KiB) is required; `mode`
 * defaults to agentic and must be a known mode; `options` is passed to the
 * mode. `tenant_id` is deprecated and ignored: the tenant is the verified
 * header's.
 */
export function parseRunRequest (body: unknown, knownMode: (m: string) => boolean, defaultMode: string): RunRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('body must be a JSON object')
  const b = body as Record<string, unknown>
  if (b['message'] === undefined) throw bad('message is required')
  if (typeof b['message'] !== 'string') throw bad('message must be a string')
  if (Buffer.byteLength(b['message']) > MAX_MESSAGE_BYTES) throw bad(`message must not exceed ${MAX_MESSAGE_BYTES} bytes`)
  const mode = b['mode'] ?? defaultMode
  if (typeof mode !== 'string' || !knownMode(mode)) throw bad(`unknown mode ${JSON.stringify(mode)}`)
  const options = b['options'] ?? {}
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw bad('options must be an object')
  return { message: b['message'], mode, options: options as Record<string, unknown> }
}
