export interface ModeInput {
  message: string
  /** Mode-specific settings from the request's `options` object. */
  options: Record<string, unknown>
  /**
   * Aborted when the run is cancelled or interrupted. Made on first read (an
   * AbortController is costly next to a short run), so a mode that may not
   * need it reads it where it waits rather than destructuring the input.
   */
  signal: AbortSignal
  /**
   * Reports a step as an event of `type` (one of the catalogue's step types,
   * docs/harness.md), with a human-readable `message` and the mode's own
   * fields as `data`. It is stored and streamed before the mode goes on. Once
   * the run is cancelled or interrupted it rejects with an AbortError, so a
   * mode that never reads `signal` still stops at its next step.
   */
  emit: (type: string, message: string, data: Record<string, unknown>) => Promise<void>
}

/** A failure a mode reports with a stable code (e.g. `model_not_configured`). */
export class ModeError extends Error {
  constructor (readonly code: string, message: string) {
    super(message)
    this.name = 'ModeError'
  }
}

/**
 * A mode is a plugin: it receives the message, a cancellation signal and
 * `emit`, and returns the result; a string `output` in it is the run's answer.
 */
export type Mode = (input: ModeInput) => Promise<unknown>
