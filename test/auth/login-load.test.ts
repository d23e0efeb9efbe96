import t from 'tap'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, CLIENT } from '../helpers/gateway.js'

const record = readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8')
const fleet = Array.from({ length: 8 }, (_, i) => ({ client_id: `cam-${i}`, client_secret: `secret-${i}`, audiences: ['evidence-gateway'], scopes: ['stream:write'] }))

t.test('200 concurrent valid logins do not starve telemetry: it keeps answering 200', async t => {
  // A short publish deadline: with scrypt on libuv's pool, the bus commits
  // waited behind 200 hashes for seconds and telemetry answered 500.
  const { url } = await startTestGateway(t, { TELEMETRY_PUBLISH_TIMEOUT_MS: '2000' }, fleet)
  const token = await login(url, CLIENT)
  let loginsDone = false
  const telemetry: number[] = []
  const sendTelemetry = async (): Promise<void> => {
    while (!loginsDone) {
      const res = await fetch(`${url}/v1/asset/track`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': `req-${Math.random()}`, 'x-request-timestamp': '1763799330' },
        body: record
      })
      await res.arrayBuffer()
      telemetry.push(res.status)
    }
  }
  const flowing = Promise.all(Array.from({ length: 4 }, sendTelemetry))
  const logins = await Promise.all(Array.from({ length: 200 }, async (_, i) => {
    const c = fleet[i % fleet.length]!
    const res = await fetch(`${url}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret, audience: 'evidence-gateway' })
    })
    const body = await res.json() as { error?: string }
    return { status: res.status, error: body.error, retryAfter: res.headers.get('retry-after') }
  }))
  loginsDone = true
  await flowing

  t.ok(telemetry.length > 0, 'telemetry flowed during the logins')
  t.same(telemetry.filter(s => s !== 200), [], 'every telemetry request got 200')
  const refused = logins.filter(l => l.status !== 200)
  t.same(refused.filter(l => l.status !== 503 || l.error !== 'temporarily_unavailable' || l.retryAfter !== '1'), [], 'a login is 200, or 503 temporarily_unavailable with Retry-After')
  t.ok(logins.some(l => l.status === 200), 'logins succeed')
})

t.test('past AUTH_HASH_QUEUE waiting checks, a login is 503 with Retry-After', async t => {
  const { url } = await startTestGateway(t, { AUTH_HASH_THREADS: '1', AUTH_HASH_QUEUE: '1' }, fleet)
  const statuses = await Promise.all(fleet.map(async c => {
    const res = await fetch(`${url}/api/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: 'wrong', audience: 'evidence-gateway' })
    })
    return [res.status, (await res.json() as { error: string }).error, res.headers.get('retry-after')] as const
  }))
  t.ok(statuses.some(([s]) => s === 503), 'eight checks at once against one thread and a queue of one: some are turned away')
  for (const [status, error, retryAfter] of statuses) {
    if (status === 503) t.same([error, retryAfter], ['temporarily_unavailable', '1'])
    else t.same([status, error], [401, 'access_denied'], 'the admitted ones are checked')
  }
})
