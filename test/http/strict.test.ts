import t from 'tap'
import '../helpers/no-keepalive.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { tailBus } from '../helpers/child.js'
import { multipartBody, envelopePart, baseEnvelope, postEvidence, clip, BOUNDARY } from '../helpers/multipart.js'

/**
 * One strictness policy on every route (issue 38, point 9): a JSON key given
 * twice, an integer past int64 or a lone surrogate refused before anything
 * starts or is published; a query parameter given twice refused; a
 * multipart name read only from the part's own parameters. Each answer is
 * the route's own 400 body.
 */
const LONE = 'must be well-formed Unicode (no lone surrogates)'
const PAST = 'must be an integer from -9223372036854775808 to 9223372036854775807'

t.test('the harness holds run bodies to the JSON policy, and starts nothing for them', async t => {
  const gw = await startTestGateway(t)
  const start = async (body: string): Promise<{ status: number, body: unknown }> => {
    const res = await fetch(`${gw.harnessUrl}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    return { status: res.status, body: await res.json() }
  }
  t.same(await start('{"message":"hi","mode":"echo","message":"other"}'), { status: 400, body: { detail: 'message is given more than once' } }, 'a key given twice')
  t.same(await start('{"message":"a\\ud800b","mode":"echo"}'), { status: 400, body: { detail: `message ${LONE}` } }, 'a lone surrogate in the message')
  t.same(await start('{"message":"hi","mode":"echo","conversation_id":"\\udc00"}'), { status: 400, body: { detail: `conversationId ${LONE}` } }, 'a lone surrogate in another free-text field')
  t.same(await start('{"message":"hi","mode":"echo","options":{"steps":18446744073709551616}}'), { status: 400, body: { detail: `options.steps ${PAST}` } }, 'an integer past int64')
  t.same(await tailBus(gw.dataDir, 'harness.runs.v1'), [], 'no run started for any of them')
  t.equal((await start('{"message":"\\ud83d\\ude00","mode":"echo","options":{"n":9223372036854775807}}')).status, 202, 'a surrogate pair and int64\'s top are fine')
})

t.test('a query parameter given twice is refused on every route, in its own body', async t => {
  const gw = await startTestGateway(t)
  const token = await login(gw.url)
  const runs = await fetch(`${gw.harnessUrl}/runs?limit=1&limit=200`)
  t.same({ status: runs.status, body: await runs.json() }, { status: 400, body: { detail: 'limit is given more than once' } }, 'GET /runs')
  const encoded = await fetch(`${gw.harnessUrl}/runs?cursor=a&%63ursor=b`)
  t.same(await encoded.json(), { detail: 'cursor is given more than once' }, 'names are compared decoded')
  t.equal((await fetch(`${gw.harnessUrl}/runs?limit=1&status=running`)).status, 200, 'distinct parameters are fine')

  const track = await fetch(`${gw.url}/v1/asset/track?x=1&x=2`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': 'q-1', 'x-request-timestamp': '1763799330' },
    body: JSON.stringify({ asset_id: 'truck-1', timestamp: '2026-01-01T00:00:00Z' })
  })
  t.same({ status: track.status, body: await track.json() }, {
    status: 400,
    body: { status: 'validation_error', message: 'x is given more than once', errors: { x: 'is given more than once' } }
  }, 'asset track')

  const loginRes = await fetch(`${gw.url}/api/v1/login?audience=a&audience=b`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: 'device-fleet', client_secret: 's3cret-for-tests', audience: 'evidence-gateway' })
  })
  t.same({ status: loginRes.status, body: await loginRes.json() }, { status: 400, body: { error: 'invalid_request', error_description: 'audience is given more than once' } }, 'login')

  const evidence = await postEvidenceQuery(gw.url, token, 'a=1&a=2')
  t.same(evidence, { status: 400, body: { status: 'error', code: 'validation_error', details: { a: 'is given more than once' } } }, 'event evidence')
})

t.test('asset track refuses a lone surrogate and an integer past int64, and publishes neither', async t => {
  const gw = await startTestGateway(t)
  const token = await login(gw.url)
  const track = async (body: string): Promise<{ status: number, body: unknown }> => {
    const res = await fetch(`${gw.url}/v1/asset/track`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': `r-${Math.random()}`, 'x-request-timestamp': '1763799330' },
      body
    })
    return { status: res.status, body: await res.json() }
  }
  const valid = '"asset_id":"truck-1","timestamp":"2026-01-01T00:00:00Z"'
  const refused = (errors: Record<string, string>): object => ({ status: 400, body: { status: 'validation_error', message: 'Validation failed', errors } })
  t.same(await track(`{${valid},"owner":"\\ud800"}`), refused({ owner: LONE }), 'a lone surrogate in a free-text field')
  t.same(await track(`{${valid},"driver_info":{"name":"x\\udfff"}}`), refused({ 'driverInfo.name': LONE }), 'in an opaque object')
  t.same(await track(`{${valid},"year":9223372036854775808}`), refused({ year: PAST }), 'year past int64')
  t.same(await track(`{${valid},"metrics":{"schema":"svc.metrics@1.0","items":[{"k":"engine.rpm","v":1}],"seq":1e19}}`), refused({ 'metrics.seq': 'must be an integer from 0 to 9223372036854775807' }), 'seq past int64 as an exponent')
  t.same(await track(`{${valid},"peripherals":{"count":-99999999999999999999}}`), refused({ 'peripherals.count': PAST }), 'an integer past int64 in an opaque object')
  t.same(await tailBus(gw.dataDir, 'asset.telemetry.v1'), [], 'nothing published')
  t.equal((await track(`{${valid},"year":2020,"owner":"\\ud83d\\ude00","metrics":{"schema":"svc.metrics@1.0","items":[{"k":"engine.rpm","v":1}],"seq":9223372036854775807}}`)).status, 200, 'a pair and int64\'s top are fine')
})

t.test('event evidence reads a part\'s name from its own parameter, never from inside a quoted filename', async t => {
  const gw = await startTestGateway(t)
  const token = await login(gw.url)
  const a = clip(1000)
  const envelope = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-quoted-name' }))])
  // The filename comes first, as a reader that searched the whole value for `name=` would meet it first.
  const media = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; filename="clip; name=envelope; x.mp4"; name="media"\r\nContent-Type: video/mp4\r\n\r\n`),
    a.data,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`)
  ])
  const body = Buffer.concat([envelope.subarray(0, envelope.length - `--${BOUNDARY}--\r\n`.length), media])
  const res = await postEvidence(gw.url, token, body)
  t.same({ status: res.status, body: res.body }, { status: 202, body: { status: 'accepted', event_id: 'evt-quoted-name', media_count: 1 } }, 'the media part is media, not a second envelope')
})

t.test('the evidence envelope and the login body are held to the same JSON policy', async t => {
  const gw = await startTestGateway(t)
  const token = await login(gw.url)
  const envelope = Buffer.from(JSON.stringify(baseEnvelope({ event_id: 'evt-lone' })).replace('"cam-3"', '"cam-3","zone_id":"z\\udc00"'))
  const body = multipartBody([{ name: 'envelope', contentType: 'application/json', data: envelope }])
  const res = await postEvidence(gw.url, token, body)
  t.same({ status: res.status, body: res.body }, { status: 400, body: { status: 'error', code: 'validation_error', details: { 'subject.zoneId': LONE } } }, 'a lone surrogate in the envelope')
  t.same(await tailBus(gw.dataDir, 'stream.events.v1'), [], 'nothing published')

  const refused = await fetch(`${gw.url}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"grant_type":"client_credentials","client_id":"device-fleet\\ud800","client_secret":"s3cret-for-tests","audience":"evidence-gateway"}'
  })
  t.same({ status: refused.status, body: await refused.json() }, { status: 400, body: { error: 'invalid_request', error_description: `client_id ${LONE}` } }, 'a lone surrogate in a login field')
})

async function postEvidenceQuery (url: string, token: string, query: string): Promise<{ status: number, body: unknown }> {
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-query' }))])
  const res = await fetch(`${url}/v1/stream/events?${query}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body })
  return { status: res.status, body: await res.json() }
}
