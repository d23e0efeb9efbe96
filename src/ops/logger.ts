import pino, { type Logger } from 'pino'

/** Bytes of log lines gathered before a write: about 20 access-log lines. */
const WRITE_BYTES = 4096
/** Longest a line waits in the buffer when traffic is too light to fill it. */
const FLUSH_MS = 100

export interface ServiceLog {
  log: Logger
  /** Resolves once every line logged so far is written (shutdown calls it before exit). */
  flush(): Promise<void>
}

/**
 * JSON lines on `dest` (stdout). The destination is asynchronous and
 * buffered: a write per access-log line, even an asynchronous one, cost a
 * thread-pool job and a syscall per request. A line is written within
 * FLUSH_MS; a crash can lose what was gathered since the last write, a stop
 * does not (`flush`).
 */
export function createLogger (level: string, dest = 1): ServiceLog {
  const out = pino.destination({ dest, sync: false, minLength: WRITE_BYTES, periodicFlush: FLUSH_MS })
  const log = pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, out)
  // The destination's own flush settles once what is left drops below
  // WRITE_BYTES with no write in flight; the rest is written synchronously, in order.
  const flush = (): Promise<void> => new Promise((resolve, reject) => {
    out.flush(err => {
      if (err) return reject(err)
      try {
        out.flushSync()
        resolve()
      } catch (e) {
        reject(e)
      }
    })
  })
  return { log, flush }
}
