import { GatewayError } from '../errors.js'
import { labelProblem } from '../validation/index.js'

export const MAX_MESSAGE_BYTES = 64 * 1024

/** The origin's `auto` lets its router pick a mode; agentic is the one that routes itself. */
const MODE_ALIASES: Readonly<Record<string, string>> = { auto: 'agentic' }

export interface RunRequest {
  message: string
  mode: string
  options: Record<string, unknown>
  conversationId: string | null
}

const bad = (detail: string): GatewayError => new GatewayError('validation_error', detail)

const JSON_TYPE = /^application\/json\s*(;|$)/i

/**
 * A run body is read only as what its sender says it is: JSON. Another
 * Content-Type, or none, is 415 `unsupported_media_type` with `Accept-Post`,
 * as on login; read as JSON anyway, a `text/plain` or form body would be
 * answered as if it were what it does not claim to be (issue 12, point 17).
 */
export function requireJsonBody (contentType: string | undefined): void {
  if (JSON_TYPE.test(contentType ?? '')) return
  throw new GatewayError('unsupported_media_type', 'unsupported_media_type: Content-Type must be application/json', { headers: { 'accept-post': 'application/json' } })
}

/**
 * A run request: `message` (string, at most 64 KiB) is required; `mode`
 * defaults to agentic and must be a known mode or `auto` (agentic);
 * `options` is passed to the mode; `conversation_id` (a label, or null) is
 * kept on the record. `tenant_id` is deprecated and ignored: the tenant is
 * the verified header's. Other fields of the origin's request (`thread_id`,
 * `user_id`, `skill_id`, `debug`, ...) are accepted and ignored.
 */
export function parseRunRequest (body: unknown, knownMode: (m: string) => boolean, defaultMode: string): RunRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('body must be a JSON object')
  const b = body as Record<string, unknown>
  if (b['message'] === undefined) throw bad('message is required')
  if (typeof b['message'] !== 'string') throw bad('message must be a string')
  if (Buffer.byteLength(b['message']) > MAX_MESSAGE_BYTES) throw bad(`message must not exceed ${MAX_MESSAGE_BYTES} bytes`)
  const asked = b['mode'] ?? defaultMode
  const mode = typeof asked === 'string' ? MODE_ALIASES[asked] ?? asked : asked
  if (typeof mode !== 'string' || !knownMode(mode)) throw bad(`unknown mode ${JSON.stringify(asked)}`)
  const options = b['options'] ?? {}
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw bad('options must be an object')
  const conversationId = b['conversation_id'] ?? null
  if (conversationId !== null) {
    if (typeof conversationId !== 'string') throw bad('conversation_id must be a string or null')
    const problem = labelProblem(conversationId)
    if (problem) throw bad(`conversation_id ${problem}`)
  }
  return { message: b['message'], mode, options: options as Record<string, unknown>, conversationId }
}

/**
 * `Last-Event-ID`: the id of the last event the caller has, a non-negative
 * decimal integer (the ids this harness sends). Absent or empty means none
 * (replay from the start). Anything else (`1.5`, `-1`, `1e3`, `Infinity`, an
 * id of another server) is refused with 400 rather than guessed at: read as
 * a number it would skip events or replay the wrong ones. Values past any
 * id a run can reach are held at the largest: a stream after them has
 * nothing to replay.
 */
/** `GET /runs/{id}?events_after=<seq>`: the record's events after that one (the previous answer's `events_next`). */
export function parseEventsAfter (query: string): number {
  const all = new URLSearchParams(query).getAll('events_after')
  if (all.length > 1) throw bad('events_after is given more than once')
  if (all.length === 0) return 0
  if (!/^\d{1,15}$/.test(all[0]!)) throw bad('events_after must be a non-negative integer')
  return Number(all[0])
}

export function parseLastEventId (header: string | undefined): number {
  const value = header?.trim() ?? ''
  if (value === '') return 0
  if (!/^\d+$/.test(value)) throw bad('Last-Event-ID must be a non-negative integer')
  return value.length > 15 ? Number.MAX_SAFE_INTEGER : Math.min(Number(value), Number.MAX_SAFE_INTEGER)
}
