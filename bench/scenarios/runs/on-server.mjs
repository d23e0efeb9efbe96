// One row of the runs scenario on one server: started, measured, stopped,
// its access log read.
import { accessLogStats, formatStatuses, formatProblems, logSize, unexpectedStatuses } from '../../lib/logs.mjs'

/** Reads the access log after the server stopped (pino flushes on shutdown). */
function accessLog (r, server, from, expect) {
  const stats = accessLogStats(server.logFile, from)
  const bytes = logSize(server.logFile) - from
  r.accessLog = { ...stats, bytes, bytesPerLine: stats.requests ? bytes / stats.requests : undefined }
  if (server.logLevel && server.logLevel !== 'info') return
  const others = unexpectedStatuses(stats.statuses, [...expect, '499'])
  if (Object.keys(others).length) r.problems.push(`unexpected statuses in the access log: ${formatStatuses(others)}`)
  if (stats.problems.length) r.notes.push(`warn/error log lines: ${formatProblems(stats.problems)}`)
}

/**
 * Starts `target`, runs `phase(server)` against it, stops it and counts its
 * access log (202 and 200 expected). Resolves to row `r`.
 */
export function onServer (ctx, target, r, phase) {
  let logFrom
  return ctx.withServer(target, r, server => {
    logFrom = logSize(server.logFile)
    return phase(server)
  }, server => accessLog(r, server, logFrom, ['202', '200']))
}
