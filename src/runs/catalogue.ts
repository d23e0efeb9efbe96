import type { RunStatus } from './types.js'

/**
 * The event types on the wire (docs/harness.md, Event catalogue). The names
 * are the origin harness's (its `event_types.json`), so its client and the
 * apps built on it read our streams; `run.queued` and `echo.step` are ours,
 * for what the origin has no word for.
 */

/** The lifecycle event each status is entered with. The origin has two ends, so a cancel is a `run.failed`. */
export const LIFECYCLE_EVENT: Readonly<Record<RunStatus, string>> = {
  queued: 'run.queued',
  running: 'run.started',
  succeeded: 'run.completed',
  failed: 'run.failed',
  cancelled: 'run.failed'
}

/** The last event of every run's stream. */
export const TERMINAL_EVENT_TYPES: ReadonlySet<string> = new Set(['run.completed', 'run.failed'])

/** What modes may emit between the lifecycle events; anything else is a bug in the mode and fails its run. */
export const STEP_EVENT_TYPES: ReadonlySet<string> = new Set([
  'agent.started', 'agent.completed', 'tool.started', 'tool.completed', 'tool.failed', 'usage.recorded', 'answer.completed',
  'echo.step'
])

/** Every type this harness emits. */
export const EVENT_TYPES: readonly string[] = [...new Set([...Object.values(LIFECYCLE_EVENT), ...STEP_EVENT_TYPES])]

/** Ours, not in the origin's list: a client of the origin skips them as it skips any type it does not know. */
export const EXTENSION_EVENT_TYPES: readonly string[] = ['run.queued', 'echo.step']
