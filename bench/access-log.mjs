// CPU per access-log line: the service's logger (src/ops/logger.ts, writing
// to /dev/null) through pino's `log.info({reqId, method, route, status, ms},
// 'request')` beside the HTTP server's template of the same line
// (src/http/access-log.ts), alternated for ACCESS_LOG_ROUNDS rounds of
// ACCESS_LOG_SECONDS each, 200 lines a turn of the event loop; CPU time
// (process.cpuUsage), the destination's writes included. Needs `npm run build`.
//
//   node bench/access-log.mjs
import { openSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_DIR } from './lib/paths.mjs'
import { cpuPerCall, printPerCall } from './lib/per-call.mjs'

const num = (name, def) => (process.env[name] ? Number(process.env[name]) : def)
const ROUNDS = num('ACCESS_LOG_ROUNDS', 5)
const SECONDS = num('ACCESS_LOG_SECONDS', 2)

const { createLogger } = await import(join(REPO_DIR, 'dist', 'ops', 'logger.js'))
const { accessLog } = await import(join(REPO_DIR, 'dist', 'http', 'access-log.js'))
const service = createLogger('info', openSync('/dev/null', 'w'))
const log = service.log.child({ server: 'gateway' })
const access = accessLog(log)
const reqId = '0195c3c2-7d0a-7b3e-9f51-6c2d8e4f1a2b'

const variants = {
  'pino log.info': i => log.info({ reqId, method: 'POST', route: '/runs:start', status: 202, ms: (i % 997) / 100 }, 'request'),
  accessLog: i => access(reqId, 'POST', '/runs:start', 202, (i % 997) / 100, false)
}

const us = await cpuPerCall(variants, { rounds: ROUNDS, seconds: SECONDS, batch: 200, turn: true })
console.log(`An access-log line, ${ROUNDS} rounds × ${SECONDS} s, CPU µs per line (written to /dev/null):`)
printPerCall(us)
