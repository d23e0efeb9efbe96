import t from 'tap'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, NO_SCOPE_CLIENT, CLIENT } from '../helpers/gateway.js'
import { runGateway, tailBus } from '../helpers/child.js'
import { settled } from '../helpers/settle.js'
import { LocalBus } from '../../src/bus/index.js'
import { openState } from '../../src/state/index.js'

const example = readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8')

async function setup (t: any, env: Record<string, string> = {}) {
  const gw = await startTestGateway(t, env)
  const token = await login(gw.url)
  const track = async (body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}/v1/asset/track`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': `req-${Math.random()}`, 'x-request-timestamp': '1763799330', ...headers },
      body
    })
    return { status: res.status, body: await res.json() as any, headers: res.headers }
  }
  // A 200 means the record is committed to the local log, so no waiting is needed here.
  const published = () => tailBus(gw.dataDir, 'asset.telemetry.v1')
  return { ...gw, token, track, published }
}

t.test('a valid record is answered 200 once the local bus has it', async t => {
  const { track, published } = await setup(t)
  const res = await track(example, { 'x-request-id': 'trace-1' })
  t.equal(res.status, 200)
  t.same(res.body, { status: 'success', message: 'message sent successfully' })
  t.equal(res.headers.get('x-request-id'), 'trace-1')
  const [m, ...rest] = await published()
  t.equal(rest.length, 0)
  t.equal(m!.key, 'truck-0042')
  t.same(m!.headers, { 'x-request-id': 'trace-1', 'client-id': CLIENT.client_id, schema: 'asset-tracking-data@1', 'message-id': `${CLIENT.client_id}/trace-1` })
  const value = m!.value
  t.equal(value.client_id, CLIENT.client_id)
  t.equal(value.request_id, 'trace-1')
  t.match(value.received_at, /^\d{4}-\d{2}-\d{2}T/)
  t.same(value.firmware, { version: '4.2.0' }, 'unknown fields are published as received')
})

t.test('/metrics counts the records of each bus send', async t => {
  const { url, track } = await setup(t)
  const sends = async () => {
    const text = await (await fetch(`${url}/metrics`)).text()
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
    return { count: value('gateway_telemetry_batch_records_count'), sum: value('gateway_telemetry_batch_records_sum') }
  }
  t.same(await sends(), { count: 0, sum: 0 })
  t.equal((await track(example)).status, 200)
  t.same(await sends(), { count: 1, sum: 1 }, 'one record, one send')
  const answers = await Promise.all(Array.from({ length: 20 }, () => track(example)))
  t.same(answers.map(a => a.status), Array(20).fill(200))
  const after = await sends()
  t.equal(after.sum, 21, 'every accepted record is in a send')
  t.ok(after.count >= 2 && after.count <= 21, `in ${after.count - 1} sends`)
  t.equal((await track('{}')).status, 400)
  t.same(await sends(), after, 'a refused record is in none')
})

t.test('bad input gets the exact status and body, and nothing is published', async t => {
  const { url, track, published } = await setup(t, { TELEMETRY_MAX_BODY: '4096' })
  const invalid = await track(JSON.stringify({ asset_id: ' ', timestamp: 'now', gps: { latitude: 91 } }))
  t.equal(invalid.status, 400)
  t.same(invalid.body, {
    status: 'validation_error',
    message: 'Validation failed',
    errors: { assetId: 'must be a non-blank string', timestamp: 'must be an ISO 8601 timestamp with a timezone', 'gps.latitude': 'must be a number between -90 and 90 degrees' }
  })
  const noHeaders = await track(example, { 'x-request-id': '', 'x-request-timestamp': 'x' })
  t.same(noHeaders.body.errors, { xRequestId: 'is required', xRequestTimestamp: 'must be Unix epoch seconds (an integer)' })
  const notJson = await track('{"asset_id": ')
  t.same([notJson.status, notJson.body], [400, { status: 'validation_error', message: 'request body is not valid JSON', errors: { body: 'must be valid JSON' } }])
  const tooBig = await track(JSON.stringify({ asset_id: 'a', timestamp: '2026-01-01T00:00:00Z', pad: 'x'.repeat(5000) }))
  t.same([tooBig.status, tooBig.body], [413, { status: 'validation_error', message: 'request body exceeds 4096 bytes', errors: { body: 'must not exceed 4096 bytes' } }])

  const noToken = await fetch(`${url}/v1/asset/track`, { method: 'POST', body: example, headers: { 'content-type': 'application/json' } })
  t.equal(noToken.status, 401)
  t.same(await noToken.json(), { status: 'error', message: 'missing Bearer token' })
  t.equal(noToken.headers.get('www-authenticate'), 'Bearer')
  const badToken = await track(example, { authorization: 'Bearer abc.def.ghi' })
  t.equal(badToken.status, 401, 'an invalid token is 401 even before the body is looked at')
  const readerToken = await login(url, NO_SCOPE_CLIENT)
  const noScope = await track(example, { authorization: `Bearer ${readerToken}` })
  t.same([noScope.status, noScope.body], [403, { status: 'error', message: 'token lacks scope asset:track:write' }])

  t.same(await published(), [], 'nothing was published for any bad request')
})

t.test('per-asset order is kept while assets are sent concurrently', async t => {
  const { track, published } = await setup(t)
  const record = JSON.parse(example)
  // Each asset's records one after another (three assets at once): a record
  // answered before the next is sent must be published before it. Concurrent
  // requests may reach the server in any order, so only this order is promised.
  const results = (await Promise.all([0, 1, 2].map(async a => {
    const answered = []
    for (let i = a; i < 60; i += 3) answered.push(await track(JSON.stringify({ ...record, asset_id: `asset-${a}`, seq: i })))
    return answered
  }))).flat()
  t.ok(results.every(r => r.status === 200))
  // Every 200 was committed before it was sent, so all 60 are there at once;
  // settled also fails on a 61st, however late it comes.
  const seen = await settled(published, 60, { settleMs: 500, timeoutMs: 0 })
  for (const a of ['asset-0', 'asset-1', 'asset-2']) {
    const seqs = seen.filter(m => m.key === a).map(m => m.value.seq)
    t.same(seqs, [...seqs].sort((x, y) => x - y), `${a} in order`)
  }
})

t.test('gateway tail prints the local log as JSON lines', async t => {
  const { track, dataDir } = await setup(t)
  await track(example, { 'x-request-id': 'a' })
  await track(example, { 'x-request-id': 'b' })
  const all = await runGateway(['tail', 'asset.telemetry.v1'], { DATA_DIR: dataDir })
  t.equal(all.code, 0, all.stderr)
  const lines = all.stdout.trim().split('\n').map(l => JSON.parse(l))
  t.same(lines.map(l => [l.offset, l.key, l.headers['x-request-id']]), [[0, 'truck-0042', 'a'], [1, 'truck-0042', 'b']])
  t.equal(lines[0].value.asset_id, 'truck-0042')
  const from = await runGateway(['tail', 'asset.telemetry.v1', '--from', '1'], { DATA_DIR: dataDir })
  t.equal(from.stdout.trim().split('\n').length, 1)
})

t.test('the schema is served in /openapi.json', async t => {
  const { url } = await setup(t)
  const doc = await (await fetch(`${url}/openapi.json`)).json() as any
  t.equal(doc.openapi, '3.1.0')
  t.equal(doc.components.schemas.AssetTrackingData.properties.metrics.properties.items.maxItems, 200)
  t.ok(doc.paths['/v1/asset/track'].post)
})

t.test('bodies a consumer could read differently from what was validated are refused, and nothing is published', async t => {
  const { track, published } = await setup(t)
  const stamp = '"timestamp":"2026-01-01T00:00:00Z"'
  const cases: Array<[string, string, Record<string, string>]> = [
    ['a key twice (validated as "ok", published with both)', `{"asset_id":"","asset_id":"ok",${stamp}}`, { assetId: 'is given more than once' }],
    ['a key twice deep in an unknown field', `{"asset_id":"a",${stamp},"peripherals":{"cam":[{"id":1,"id":2}]}}`, { 'peripherals.cam[0].id': 'is given more than once' }],
    ['a number beyond JSON', `{"asset_id":"a",${stamp},"gps":{"altitude":1e309}}`, { 'gps.altitude': 'must be a finite number (JSON has no Infinity)' }],
    ['nesting past the bound', `{"asset_id":"a",${stamp},"x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, { body: 'must not nest deeper than 32 levels' }],
    ['an asset_id with a NUL', `{"asset_id":"truck\\u0000",${stamp}}`, { assetId: 'must not contain control characters' }],
    ['an asset_id with a lone surrogate', `{"asset_id":"truck\\ud800",${stamp}}`, { assetId: 'must be well-formed Unicode (no lone surrogates)' }]
  ]
  for (const [name, body, errors] of cases) {
    const res = await track(body)
    t.same([res.status, res.body], [400, { status: 'validation_error', message: 'Validation failed', errors }], name)
  }
  t.same(await published(), [], 'nothing was published')
  const boolean = await track(`{"asset_id":"a",${stamp},"sensors":{"engine_status":true}}`)
  t.equal(boolean.status, 200, 'engine_status as a boolean, as the origin system\'s clients send it')
})

t.test('a retried record carries the same message-id, so consumers can drop the duplicate', async t => {
  const { track, published } = await setup(t)
  const first = await track(example, { 'x-request-id': 'retry-me' })
  const again = await track(example, { 'x-request-id': 'retry-me' })
  const other = await track(example, { 'x-request-id': 'another' })
  t.same([first.status, again.status, other.status], [200, 200, 200])
  const ids = (await published()).map(m => m.headers['message-id'])
  t.same(ids, [`${CLIENT.client_id}/retry-me`, `${CLIENT.client_id}/retry-me`, `${CLIENT.client_id}/another`], 'telemetry is at-least-once: both copies are published, with one id')
})

t.test('gateway tail prints any record of the log, even ones earlier versions let through', async t => {
  const dataDir = t.testdir()
  const deep = `{"asset_id":"a","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`
  const hostile = [deep, '{"asset_id":"","asset_id":"ok"}', '{"asset_id":"a","gps":{"altitude":1e309}}', '{"not json', '{"asset_id":"fine"}']
  const state = openState(dataDir)
  await new LocalBus(state).publish('asset.telemetry.v1', hostile.map(value => ({ key: 'k', value, headers: {} })))
  await new LocalBus(state).publish('asset.telemetry.v1', [{ key: 'k', value: Buffer.from([0xff, 0x00, 0x7b]), headers: {} }])
  await state.close()
  for (let from = 0; from < 6; from++) {
    const res = await runGateway(['tail', 'asset.telemetry.v1', '--from', String(from)], { DATA_DIR: dataDir })
    t.equal(res.code, 0, `from ${from}: exits 0 ${res.stderr.slice(0, 200)}`)
    t.equal(res.stdout.trim().split('\n').length, 6 - from, `from ${from}: one line per record`)
  }
  const lines = (await runGateway(['tail', 'asset.telemetry.v1'], { DATA_DIR: dataDir })).stdout.trim().split('\n').map(l => JSON.parse(l))
  t.same(lines.slice(0, 4).map(l => l.value), hostile.slice(0, 4), 'what would not print back as it was is shown verbatim, as text')
  t.same(lines[4].value, { asset_id: 'fine' }, 'a sound record is shown as JSON')
  t.equal(lines[5].value, '\ufffd\u0000{', 'bytes that are not UTF-8 still print')
})
