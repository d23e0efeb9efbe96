import t from 'tap'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { tailBus } from '../helpers/child.js'
import { METRICS_SCHEMA, recordChecks } from '../../src/telemetry/index.js'

/** The origin system's ten metric examples (the fixture's $comment says where they come from). */
const { examples } = JSON.parse(readFileSync(new URL('../fixtures/origin-metrics.json', import.meta.url), 'utf8')) as { examples: Array<{ source: string, record: any }> }
const ORIGIN = 'miot.metrics@1.0'
const headers = { 'content-type': 'application/json', 'x-request-timestamp': '1763799330' }

async function setup (t: any, env: Record<string, string> = {}) {
  const gw = await startTestGateway(t, env)
  const token = await login(gw.url)
  const post = async (path: string, body: string, extra: Record<string, string>) => {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, ...headers, ...extra }, body })
    return { status: res.status, body: await res.json() as any }
  }
  return { ...gw, post, published: () => tailBus(gw.dataDir, 'asset.telemetry.v1') }
}

t.test('the fixtures differ from valid records by the schema name alone', async t => {
  t.equal(examples.length, 10)
  const spec = recordChecks([METRICS_SCHEMA])
  for (const { source, record } of examples) {
    t.equal(record.metrics.schema, ORIGIN, source)
    t.same(spec.recordErrors({ ...record, metrics: { ...record.metrics, schema: METRICS_SCHEMA } }, { ...headers, 'x-request-id': 'r' }), {}, `${source}: valid under the spec's name`)
  }
})

t.test('with the alias listed, both paths (bytes and parsed) accept them; any other name is still refused', async t => {
  const checks = recordChecks([METRICS_SCHEMA, ORIGIN])
  for (const { source, record } of examples) {
    const raw = Buffer.from(JSON.stringify(record))
    t.equal(checks.acceptedAssetId({ ...headers, 'x-request-id': 'r' }, raw), record.asset_id, `${source}: the byte walk`)
    t.same(checks.recordErrors(record, { ...headers, 'x-request-id': 'r' }, raw), {}, `${source}: the full path`)
    const other = { ...record, metrics: { ...record.metrics, schema: 'miot.metrics@2.0' } }
    t.same(checks.recordErrors(other, { ...headers, 'x-request-id': 'r' }), { 'metrics.schema': 'must equal svc.metrics@1.0' }, `${source}: another name`)
    t.equal(checks.acceptedAssetId({ ...headers, 'x-request-id': 'r' }, Buffer.from(JSON.stringify(other))), undefined)
  }
})

t.test('out of the box the gateway refuses each origin example with the spec\'s 400', async t => {
  const { post, published } = await setup(t)
  for (const [i, { source, record }] of examples.entries()) {
    const res = await post('/v1/asset/track', JSON.stringify(record), { 'x-request-id': `origin-${i}` })
    t.same([res.status, res.body], [400, { status: 'validation_error', message: 'Validation failed', errors: { 'metrics.schema': 'must equal svc.metrics@1.0' } }], source)
  }
  t.same(await published(), [], 'nothing published')
})

t.test('TELEMETRY_METRICS_SCHEMAS lists the origin\'s name: all ten accepted, one by one and as a batch, published as the device sent them', async t => {
  const { post, published } = await setup(t, { TELEMETRY_METRICS_SCHEMAS: `${METRICS_SCHEMA},${ORIGIN}` })
  for (const [i, { source, record }] of examples.entries()) {
    const res = await post('/v1/asset/track', JSON.stringify(record), { 'x-request-id': `origin-${i}` })
    t.same([res.status, res.body], [200, { status: 'success', message: 'message sent successfully' }], source)
  }
  const batch = await post('/v1/asset/track:batch', examples.map(e => JSON.stringify(e.record)).join('\n'), { 'content-type': 'application/x-ndjson', 'x-request-id': 'origin-batch' })
  t.same([batch.status, batch.body.accepted, batch.body.rejected], [200, 10, 0], 'the batch route too')
  const other = await post('/v1/asset/track', JSON.stringify({ ...examples[0]!.record, metrics: { ...examples[0]!.record.metrics, schema: 'x.metrics@1.0' } }), { 'x-request-id': 'other' })
  t.same([other.status, other.body.errors], [400, { 'metrics.schema': 'must equal svc.metrics@1.0' }], 'a name not listed stays refused')
  const messages = await published()
  t.equal(messages.length, 20)
  for (const [i, m] of messages.entries()) {
    const { source, record } = examples[i % 10]!
    const { client_id: _c, received_at: _r, request_id: _q, ...sent } = m.value
    t.same(sent, record, `${source}: the record as sent, schema name included`)
  }
})
