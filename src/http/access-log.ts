import pino, { type Logger } from 'pino'

/** One line per answered request: at info, or at debug for a quiet route (health probes). */
export type AccessLog = (reqId: string, method: string, route: string, status: number, ms: number, quiet: boolean) => void

const { chindingsSym, streamSym, timeSym } = pino.symbols
const DEBUG = 20
const INFO = 30
/** Anything but printable ASCII without `"` and `\`: a string with none of it is its own JSON between quotes. */
const ESCAPED = /[^\x20\x21\x23-\x5b\x5d-\x7e]/

/**
 * The access log of `log`: the very line `log.info({reqId, method, route,
 * status, ms}, 'request')` writes (its level, time and bindings, through its
 * stream), built as one template instead of by pino's serialisation of an
 * object: 1.1 against 1.9 µs a line with the service's destination, its
 * writes included (`node bench/access-log.mjs`), on every request. It reads the
 * logger's parts through `pino.symbols` (exported by pino for such uses); the
 * level is read at each line, so a level changed at run time holds. The
 * gateway's loggers use no formatters, mixins or hooks, which this skips.
 */
export function accessLog (log: Logger): AccessLog {
  const parts = log as unknown as Record<symbol, unknown>
  const stream = parts[streamSym] as { write: (line: string) => unknown }
  const bindings = parts[chindingsSym] as string
  const time = parts[timeSym] as () => string
  return (reqId, method, route, status, ms, quiet) => {
    const level = quiet ? DEBUG : INFO
    if (level < log.levelVal) return
    stream.write(`{"level":${level}${time()}${bindings},"reqId":${text(reqId)},"method":${text(method)},"route":${text(route)},"status":${status},"ms":${ms},"msg":"request"}\n`)
  }
}

/** A string as JSON; a request id, a method and a route label are printable ASCII, and nearly never need escaping. */
function text (value: string): string {
  return ESCAPED.test(value) ? JSON.stringify(value) : `"${value}"`
}
