import type { Logger } from 'pino'

/**
 * An error nothing handled (a throw, or a rejection no one awaited) ends the
 * process as Node would end it, exit code 1, but logged first as a `fatal`
 * line with its stack, and the log flushed: Node's own report goes to
 * stderr, which whoever reads the JSON log does not read, so the reason for
 * a restart was missing from it. Nothing is drained: the process's state is
 * unknown, and what was in flight is what a crash leaves (runs are ended as
 * `interrupted` by the next process, docs/harness.md).
 */
export function logCrashes (log: Logger, flushSync: () => void): void {
  process.on('uncaughtException', (err, origin) => {
    log.fatal({ err, origin }, 'ending on an error nothing handled')
    // Written at once: a chunk of earlier lines already being written may
    // land after it (every line has its time), but none is lost to the exit.
    try {
      flushSync()
    } catch {
      // stdout is gone: there is no one left to tell.
    }
    process.exit(1)
  })
}
