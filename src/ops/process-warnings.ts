import type { Logger } from 'pino'

/** The warning the idle collector's `vm.measureMemory` draws at its first run (src/ops/idle-collector.ts). */
const isMeasureMemory = (warning: Error): boolean => warning.name === 'ExperimentalWarning' && warning.message.startsWith('vm.measureMemory ')

/**
 * kafkajs (2.2.4, its last release) schedules its request queue's next check
 * with a negative delay whenever the broker has not throttled it. Node 23 and
 * later warn of the first negative delay of a process, and run the timer
 * after 1 ms, as every Node did before and as kafkajs means: nothing is wrong.
 */
const isKafkajsNegativeTimeout = (warning: Error): boolean =>
  warning.name === 'TimeoutNegativeWarning' && /[\\/]kafkajs[\\/]src[\\/]network[\\/]requestQueue[\\/]/.test(warning.stack ?? '')

/**
 * Process warnings (a deprecation, an experimental API, a listener leak) as
 * log lines, in place of the text Node prints on stderr: whoever reads the
 * log reads JSON, one object a line, and would not see a warning printed
 * beside it. The one the idle collector draws on purpose, and kafkajs's
 * harmless one, are logged at debug.
 */
export function logProcessWarnings (log: Logger): void {
  for (const printer of process.listeners('warning')) process.off('warning', printer)
  const onWarning = (warning: Error): void => {
    const fields = { warning: { name: warning.name, message: warning.message, code: (warning as NodeJS.ErrnoException).code } }
    if (isMeasureMemory(warning) || isKafkajsNegativeTimeout(warning)) log.debug(fields, 'process warning')
    else log.warn(fields, 'process warning')
  }
  process.on('warning', onWarning)
}
