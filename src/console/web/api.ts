import { askForToken, credentials } from './auth.js'
import { here } from './place.js'

/** A non-2xx answer of the API, with its `detail`. */
export class ApiError extends Error {
  constructor (readonly status: number, readonly detail: string) {
    super(`${status} ${detail}`)
  }
}

/**
 * A request to the API, with the token (and tenant) on it. A 401 asks for a
 * token and is thrown as an ApiError like any other refusal.
 */
export async function call (path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers)
  const { token, tenant } = credentials()
  if (token) headers.set('authorization', `Bearer ${token}`)
  if (tenant) headers.set('x-svc-tenant-client-id', tenant)
  const res = await fetch(`${here.root}${path}`, { ...init, headers, cache: 'no-store' })
  if (res.ok) return res
  const detail = await res.json().then((b: { detail?: unknown }) => String(b.detail ?? res.statusText), () => res.statusText)
  if (res.status === 401) askForToken(token ? `The token was refused: ${detail}` : `The harness asks for a token (${detail}).`)
  throw new ApiError(res.status, detail)
}

export async function getJson<T> (path: string): Promise<T> {
  return await (await call(path)).json() as T
}

export async function postJson<T> (path: string, body?: unknown): Promise<T> {
  const res = await call(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  return await res.json() as T
}

export interface RunRecord {
  run_id: string
  tenant_id: string
  mode: string
  message: string
  status: 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled'
  created_at: string
  started_at: string | null
  ended_at: string | null
  answer: string | null
  error: { code: string, message: string } | null
  conversation_id: string | null
  last_event_id: number
}

export interface RunEvent {
  id: string
  type: string
  seq: number
  run_id: string
  message: string
  data: Record<string, unknown>
  created_at: string
}

export const IN_FLIGHT: ReadonlySet<string> = new Set(['queued', 'running'])

/** Of two copies of a record, the later one: records only ever move forward, and `last_event_id` says how far. */
export function newer (a: RunRecord | undefined, b: RunRecord): RunRecord {
  return a !== undefined && a.last_event_id > b.last_event_id ? a : b
}
