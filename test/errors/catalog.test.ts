import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { catalog, GatewayError, reasons, refusal, toGatewayError, unauthorized, type ErrorCode } from '../../src/errors.js'

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

const reasonRows = [...doc.slice(doc.indexOf('## Reasons')).matchAll(/^\| `([^`]+)` \| `([a-z_]+)` \| (\d{3}) \|/gm)]

t.test('every reason is documented under its code and status, and nothing else is', async t => {
  const listed = Object.fromEntries(reasonRows.map(m => [m[1]!.replace(/:<[a-z]+>$/, ''), m[2]]))
  t.same(listed, reasons)
  for (const m of reasonRows) t.equal(Number(m[3]), catalog[m[2] as ErrorCode].status, `${m[1]} status`)
})

function sources (dir: URL): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap(e => e.isDirectory()
    ? sources(new URL(`${e.name}/`, dir))
    : e.name.endsWith('.ts') ? [readFileSync(new URL(e.name, dir), 'utf8')] : [])
}
const src = sources(new URL('../../src/', import.meta.url)).join('\n')

// A code or reason no route raises is a row a reader looks for in vain; one
// raised under a plain message would bypass the table.
t.test('every code and every reason is raised somewhere in src/', async t => {
  const raised = src.replace(/export const (catalog|reasons) = \{[\s\S]*?\} as const/g, '')
  const raisedReason = (reason: string) => new RegExp(`(refusal|unauthorized)\\('${reason}'|return '${reason}'`).test(raised)
  for (const reason of Object.keys(reasons)) t.ok(raisedReason(reason), reason)
  const byReason = new Set<string>(Object.entries(reasons).filter(([r]) => raisedReason(r)).map(([, code]) => code))
  for (const code of Object.keys(catalog)) t.ok(raised.includes(`'${code}'`) || byReason.has(code), code)
})

t.test('a reason is raised only through the table, never as a message of its own', async t => {
  const bypass = [...src.matchAll(/new GatewayError\('[a-z_]+', [`']([a-z_]+:[a-z_$]+|[a-z]+_[a-z_]+)[`':]/g)].map(m => m[1]!)
  t.same(bypass.filter(r => Object.keys(reasons).some(k => r === k || r.startsWith(`${k}:`) || k.startsWith(r))), [])
})

t.test('a refusal carries its reason, its value and its code', async t => {
  const e = refusal('run_not_in_flight', { value: 'succeeded' })
  t.equal(e.code, 'conflict')
  t.equal(e.status, 409)
  t.equal(e.message, 'run_not_in_flight:succeeded')
  t.same(unauthorized('auth_failed:expired').headers, { 'www-authenticate': 'Bearer' })
})
