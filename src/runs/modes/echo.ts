import { setTimeout as sleep } from 'node:timers/promises'
import type { Mode } from './types.js'

/**
 * For tests and load: emits `options.steps` `echo.step` events (default 1)
 * echoing the message, `options.delay_ms` apart (default 0), and returns the
 * message, which is the run's answer.
 */
export const echo: Mode = async input => {
  const { message, options, emit } = input
  const steps = clamp(options['steps'], 1, 0, 1000)
  const delay = clamp(options['delay_ms'], 0, 0, 60_000)
  for (let i = 1; i <= steps; i++) {
    // Not destructured (see ModeInput.signal); without a delay, emit's
    // rejection is what stops a cancelled run.
    if (delay > 0) await sleep(delay, undefined, { signal: input.signal })
    await emit('echo.step', `Echo step ${i}`, { step: i, text: message })
  }
  return { output: message }
}

function clamp (value: unknown, fallback: number, min: number, max: number): number {
  return typeof value === 'number' && Number.isInteger(value) ? Math.min(max, Math.max(min, value)) : fallback
}
