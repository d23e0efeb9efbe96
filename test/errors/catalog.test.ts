import t from 'tap'
import { readFileSync } from 'node:fs'
import { catalog, GatewayError, toGatewayError, type ErrorCode } from '../../src/errors.js'

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8')
const documented = new Map([...doc.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| (yes|no) \|/gm)].map(m => [m[1]!, { status: Number(m[2]), retryable: m[3] === 'yes' }]))

t.test('every code of the catalog is documented with its status and retry rule, and nothing else is', async t => {
  t.same(Object.fromEntries(documented), catalog)
})

t.test('the codes the spec and the design name are in the catalog with their statuses', async t => {
  // interface.md, Errors: the evidence table; DESIGN.md, Evidence: 413 and 409.
  const named: Partial<Record<ErrorCode, number>> = {
    validation_error: 400,
    unknown_event_type: 400,
    checksum_mismatch: 400,
    payload_too_large: 413,
    idempotency_in_progress: 409,
    publish_failed: 500
  }
  for (const [code, status] of Object.entries(named)) t.equal(catalog[code as ErrorCode]?.status, status, code)
})

t.test('a GatewayError takes its status and retry rule from the catalog', async t => {
  const e = new GatewayError('overloaded', 'busy', { headers: { 'retry-after': '1' } })
  t.equal(e.status, 503)
  t.equal(e.retryable, true)
  t.equal(new GatewayError('validation_error', 'x').retryable, false)
  const hidden = toGatewayError(new Error('secret internals'))
  t.equal(hidden.code, 'internal_error')
  t.equal(hidden.message, 'internal error')
})
