import type { Logger } from 'pino'

/** The warning the idle collector's `vm.measureMemory` draws at its first run (src/ops/idle-collector.ts). */
const isMeasureMemory = (warning: Error): boolean => warning.name === 'ExperimentalWarning' && warning.message.startsWith('vm.measureMemory ')

/**
 * Process warnings (a deprecation, an experimental API, a listener leak) as
 * log lines, in place of the text Node prints on stderr: whoever reads the
 * log reads JSON, one object a line, and would not see a warning printed
 * beside it. The one the idle collector draws on purpose is logged at debug.
 */
export function logProcessWarnings (log: Logger): void {
  for (const printer of process.listeners('warning')) process.off('warning', printer)
  const onWarning = (warning: Error): void => {
    const fields = { warning: { name: warning.name, message: warning.message, code: (warning as NodeJS.ErrnoException).code } }
    if (isMeasureMemory(warning)) log.debug(fields, 'process warning')
    else log.warn(fields, 'process warning')
  }
  process.on('warning', onWarning)
}
