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
  result: unknown
  error: RunError | null
  last_event_id: number
}

/** `run.<status>` for transitions, `step` for what a mode reports along the way. */
export type RunEventName = `run.${RunStatus}` | 'step'

/** An event of a run, serialised once (`encodeEvent`): stored, streamed and published as this text. */
export interface RunEvent {
  id: number
  event: RunEventName
  /** JSON of the event's data: a step, or the run's record after a transition. */
  data: string
  /** JSON of the whole event, `{id, event, data}`: the stored value. */
  json: string
  /** Its `text/event-stream` frame, made by `formatEvent` on first use and shared by every subscriber. */
  frame?: string
}

export function isTerminal (status: RunStatus): boolean {
  return (TERMINAL as readonly string[]).includes(status)
}

const TERMINAL_EVENTS: ReadonlySet<string> = new Set(TERMINAL.map(s => `run.${s}`))

/** The last event a run's stream carries. */
export function isTerminalEvent (e: RunEvent): boolean {
  return TERMINAL_EVENTS.has(e.event)
}
