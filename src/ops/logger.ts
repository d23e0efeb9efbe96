import pino, { type Logger } from 'pino'

/**
 * JSON lines on stdout. The destination is asynchronous (buffered), since a
 * synchronous write per access-log line would cost more than the request;
 * the caller flushes it on shutdown.
 */
export function createLogger (level: string): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 1, sync: false }))
}
