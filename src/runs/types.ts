export const IN_FLIGHT = ['queued', 'running'] as const
export const TERMINAL = ['succeeded', 'failed', 'cancelled'] as const
export type RunStatus = typeof IN_FLIGHT[number] | typeof TERMINAL[number]

export interface RunError {
  code: string
  message: string
}

export interface RunRecord {
  run_id: string
  tenant_id: string
  mode: string
  message: string
  status: RunStatus
  created_at: string
  started_at: string | null
  ended_at: string | null
  /** What the mode returned. */
  result: unknown
  /** The final text (the mode result's `output` when it is a string), else null. */
  answer: string | null
  /** Always empty: no mode produces artifacts yet. Kept for the origin's clients, which read it. */
  artifacts: unknown[]
  /** Passed through from the request, for the caller to group runs by. */
  conversation_id: string | null
  error: RunError | null
  last_event_id: number
}

/**
 * An event of a run, serialised once (`encodeEvent`): the same text is
 * stored, is the `data` of its SSE frame and the value of its bus message.
 */
export interface RunEvent {
  /** Dense per run from 1; on the wire it is `id` (a string) and `seq` (this number). */
  id: number
  type: string
  /** The whole event object, `{id, type, seq, run_id, tenant_id, message, data, created_at}`. */
  json: string
  /** For a lifecycle event when it was made (not when read back): the run's record as of it, as JSON. */
  record?: string
  /** Its `text/event-stream` frame, made by `formatEvent` on first use and shared by every subscriber. */
  frame?: string
}

export function isTerminal (status: RunStatus): boolean {
  return (TERMINAL as readonly string[]).includes(status)
}
