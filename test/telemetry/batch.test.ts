import t from 'tap'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, NO_SCOPE_CLIENT, CLIENT } from '../helpers/gateway.js'
import { tailBus } from '../helpers/child.js'

// On one line, as NDJSON has it.
const example = JSON.stringify(JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8')))
const record = (assetId: string, extra: object = {}) => JSON.stringify({ asset_id: assetId, timestamp: '2026-11-22T08:00:00Z', gps: { latitude: 52.5, longitude: 13.4 }, ...extra })
const invalid = JSON.stringify({ asset_id: ' ', timestamp: 'now', gps: { latitude: 91 } })

async function setup (t: any, env: Record<string, string> = {}) {
  const gw = await startTestGateway(t, env)
  const token = await login(gw.url)
  const post = async (path: string, body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', 'x-request-id': 'batch-1', 'x-request-timestamp': '1763799330', ...headers },
      body
    })
    return { status: res.status, body: await res.json() as any, headers: res.headers }
  }
  const batch = (body: string, headers: Record<string, string> = {}) => post('/v1/asset/track:batch', body, headers)
  const single = (body: string) => post('/v1/asset/track', body, { 'content-type': 'application/json', 'x-request-id': `single-${Math.random()}` })
  const published = () => tailBus(gw.dataDir, 'asset.telemetry.v1')
  return { ...gw, token, batch, single, published }
}

t.test('NDJSON: every record accepted and on the bus, each as a one-record request publishes it', async t => {
  const { batch, published } = await setup(t)
  const res = await batch(`${record('truck-1')}\n${example}\r\n\n${record('truck-3')}\n`)
  t.equal(res.status, 200)
  t.same(res.body, {
    status: 'success',
    message: '3 of 3 records published',
    accepted: 3,
    rejected: 0,
    results: [{ index: 0, status: 'accepted' }, { index: 1, status: 'accepted' }, { index: 2, status: 'accepted' }]
  })
  const messages = await published()
  t.same(messages.map(m => m.key), ['truck-1', 'truck-0042', 'truck-3'], 'in order, keyed by asset_id')
  t.same(messages.map(m => m.headers), [0, 1, 2].map(i => ({ 'x-request-id': `batch-1#${i}`, 'client-id': CLIENT.client_id, schema: 'asset-tracking-data@1', 'message-id': `${CLIENT.client_id}/batch-1#${i}` })))
  const value = messages[1]!.value as any
  t.same({ ...value, received_at: undefined }, { ...JSON.parse(example), client_id: CLIENT.client_id, request_id: 'batch-1#1', received_at: undefined }, 'the record as received plus the three members')
  t.match(value.received_at, /^\d{4}-\d{2}-\d{2}T/)
})

t.test('a JSON array: the same', async t => {
  const { batch, published } = await setup(t)
  const res = await batch(` [ ${record('a')} ,\n${record('b', { note: 'a ] , "[ { in a string \\" ]' })}]\n`, { 'content-type': 'application/json' })
  t.equal(res.status, 200)
  t.equal(res.body.accepted, 2)
  t.same((await published()).map(m => [m.key, (m.value as any).note]), [['a', undefined], ['b', 'a ] , "[ { in a string \\" ]']])
})

t.test('some invalid: 200 partial_success, each refused record with the body a one-record request gets, only the valid published', async t => {
  const { batch, single, published } = await setup(t, { TELEMETRY_MAX_BODY: '1024' })
  const large = record('big', { pad: 'x'.repeat(2000) })
  const res = await batch([record('ok-0'), invalid, '{"asset_id": ', record('ok-3'), large, '[1]'].join('\n'))
  t.equal(res.status, 200)
  t.equal(res.body.status, 'partial_success')
  t.same([res.body.accepted, res.body.rejected], [2, 4])
  t.same(res.body.results[0], { index: 0, status: 'accepted' })
  t.same(res.body.results[3], { index: 3, status: 'accepted' })
  for (const [i, body] of [[1, invalid], [2, '{"asset_id": '], [5, '[1]']] as const) {
    const alone = await single(body)
    t.equal(alone.status, 400)
    t.same(res.body.results[i], { index: i, ...alone.body }, `record ${i}: ${JSON.stringify(alone.body.errors)}`)
  }
  t.same(res.body.results[4], { index: 4, status: 'validation_error', message: 'record exceeds 1024 bytes', errors: { body: 'must not exceed 1024 bytes' } })
  t.same((await published()).map(m => [m.key, m.headers['x-request-id']]), [['ok-0', 'batch-1#0'], ['ok-3', 'batch-1#3']], 'the valid records keep their index')
})

t.test('no record valid: 400 with every record\'s errors, nothing published', async t => {
  const { batch, published } = await setup(t)
  const res = await batch(`${invalid}\n{}`)
  t.equal(res.status, 400)
  t.same([res.body.status, res.body.accepted, res.body.rejected], ['validation_error', 0, 2])
  t.same(res.body.results.map((r: any) => [r.index, r.status]), [[0, 'validation_error'], [1, 'validation_error']])
  t.same(res.body.results[1].errors, { assetId: 'is required', timestamp: 'is required' })
  t.same(await published(), [])
})

t.test('a request refused whole gets the exact status and body, and nothing of it is published', async t => {
  const { url, batch, published } = await setup(t, { TELEMETRY_BATCH_MAX_RECORDS: '3', TELEMETRY_BATCH_MAX_BODY: '4096' })
  const two = `${record('a')}\n${record('b')}`
  const headerless = await batch(two, { 'x-request-id': '', 'x-request-timestamp': 'x' })
  t.same([headerless.status, headerless.body], [400, { status: 'validation_error', message: 'Validation failed', errors: { xRequestId: 'is required', xRequestTimestamp: 'must be Unix epoch seconds (an integer)' } }])
  const wrongType = await batch(two, { 'content-type': 'text/plain' })
  t.same([wrongType.status, wrongType.body.errors], [400, { contentType: 'must be application/json (an array of records) or application/x-ndjson (a record a line)' }])
  for (const body of [record('a'), `[${record('a')},]`, `[${record('a')}] x`, `[${record('a')}`, '[{"a":"]}']) {
    const notArray = await batch(body, { 'content-type': 'application/json' })
    t.same([notArray.status, notArray.body], [400, { status: 'validation_error', message: 'request body is not a JSON array', errors: { body: 'must be a JSON array of records' } }], body.slice(0, 40))
  }
  for (const [type, body] of [['application/json', '[ ]'], ['application/x-ndjson', '\n \n']]) {
    const empty = await batch(body, { 'content-type': type! })
    t.same([empty.status, empty.body.errors], [400, { body: 'must hold at least one record' }], `${type} without a record`)
  }
  const four = await batch([1, 2, 3, 4].map(i => record(`a${i}`)).join('\n'))
  t.same([four.status, four.body], [413, { status: 'validation_error', message: 'batch holds more than 3 records', errors: { body: 'must hold at most 3 records' } }])
  const big = await batch(record('a', { pad: 'x'.repeat(5000) }))
  t.same([big.status, big.body], [413, { status: 'validation_error', message: 'request body exceeds 4096 bytes', errors: { body: 'must not exceed 4096 bytes' } }])
  const noToken = await fetch(`${url}/v1/asset/track:batch`, { method: 'POST', body: two, headers: { 'content-type': 'application/x-ndjson' } })
  t.equal(noToken.status, 401)
  const reader = await login(url, NO_SCOPE_CLIENT)
  const noScope = await batch(two, { authorization: `Bearer ${reader}` })
  t.same([noScope.status, noScope.body], [403, { status: 'error', message: 'token lacks scope asset:track:write' }])
  t.same(await published(), [], 'nothing was published')
})

t.test('records that would pass the pending bound: 503 with Retry-After for the whole request, none of it published', async t => {
  const { batch, published } = await setup(t, { TELEMETRY_MAX_PENDING: '3' })
  const res = await batch([1, 2, 3, 4].map(i => record(`a${i}`)).join('\n'))
  t.equal(res.status, 503)
  t.equal(res.headers.get('retry-after'), '1')
  t.same(res.body, { status: 'error', message: 'Too many records pending; retry later', detail: '0 records awaiting acknowledgment' })
  const fits = await batch([1, 2, 3].map(i => record(`b${i}`)).join('\n'))
  t.equal(fits.status, 200, 'as many as the bound allows are taken')
  t.same((await published()).map(m => m.key), ['b1', 'b2', 'b3'])
})
