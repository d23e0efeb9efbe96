// Baseline `bare-uws-batch` of the `telemetry` scenario: the ceiling of the
// batch route. The uWebSockets.js build the gateway uses, reading a POST of
// NDJSON records, and for each record the gateway's own per-record work
// from dist/ (the split, the byte check or JSON.parse and ajv, the message
// built as the bus would get it), answering 200 with a result per record.
// No authentication, no batcher, no publish.
// Listens on HOST:PORT (PORT 0: the kernel picks), prints
// {"msg":"bare-uws-batch listening","port":N} on stdout, exits 0 on SIGTERM/SIGINT.
import { join } from 'node:path'
import { loadUws, listen, readBody } from '../lib/uws.mjs'
import { REPO_DIR } from '../lib/paths.mjs'

const { ndjsonSpans } = await import(join(REPO_DIR, 'dist', 'telemetry', 'batch-body.js'))
const { recordMessage, recordRequestId, resultText, batchAnswer } = await import(join(REPO_DIR, 'dist', 'telemetry', 'batch.js'))
const { recordChecks } = await import(join(REPO_DIR, 'dist', 'telemetry', 'record.js'))
const { variables } = await import(join(REPO_DIR, 'dist', 'config', 'variables.js'))
const { GatewayError } = await import(join(REPO_DIR, 'dist', 'errors.js'))
// The gateway's checks with its default TELEMETRY_METRICS_SCHEMAS.
const checks = recordChecks(variables.find(v => v.name === 'TELEMETRY_METRICS_SCHEMAS').default)
const MAX_RECORD = 1024 * 1024

const uWS = loadUws('bare-uws-batch')
const app = uWS.App().post('/v1/asset/track:batch', (res, req) => {
  const requestId = req.getHeader('x-request-id')
  readBody(res, body => {
    const receivedAt = new Date().toISOString()
    const results = []
    const failures = []
    for (const [i, [start, end]] of ndjsonSpans(body).entries()) {
      const m = recordMessage(checks, body.subarray(start, end), { clientId: 'bench', requestId: recordRequestId(requestId, i), receivedAt, tenantKey: 'bench' }, MAX_RECORD)
      const err = m instanceof GatewayError ? m : undefined
      if (err) failures.push(err)
      results.push(resultText(i, err))
    }
    const answer = batchAnswer(results, failures)
    res.writeStatus(answer.status === 200 ? '200 OK' : '400 Bad Request').writeHeader('content-type', 'application/json').end(answer.body)
  })
})
listen(uWS, app, 'bare-uws-batch')
