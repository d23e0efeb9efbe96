import { setTimeout as sleep } from 'node:timers/promises'
import type { Mode } from './types.js'

/**
 * A step echoes at most this much of the message: the run stores the whole
 * message in its record already, and a 64 KiB message copied into each of a
 * thousand steps made one request write 140 MB.
 */
export const ECHO_TEXT_MAX = 256

/**
 * For tests and load: emits `options.steps` `echo.step` events (default 1)
 * echoing the message (its first ECHO_TEXT_MAX characters, with
 * `truncated: true` when it is longer), `options.delay_ms` apart (default
 * 0), and returns the message, which is the run's answer.
 */
export const echo: Mode = async input => {
  const { message, options, emit } = input
  const steps = clamp(options['steps'], 1, 0, 1000)
  const delay = clamp(options['delay_ms'], 0, 0, 60_000)
  const echoed = message.length > ECHO_TEXT_MAX ? { text: message.slice(0, ECHO_TEXT_MAX), truncated: true } : { text: message }
  for (let i = 1; i <= steps; i++) {
    // Not destructured (see ModeInput.signal); without a delay, emit's
    // rejection is what stops a cancelled run.
    if (delay > 0) await sleep(delay, undefined, { signal: input.signal })
    await emit('echo.step', `Echo step ${i}`, { step: i, ...echoed })
  }
  return { output: message }
}

function clamp (value: unknown, fallback: number, min: number, max: number): number {
  return typeof value === 'number' && Number.isInteger(value) ? Math.min(max, Math.max(min, value)) : fallback
}
