import t from 'tap'
import { SignJWT } from 'jose'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { startIdp, harnessAuthEnv } from '../helpers/jwks.js'
import { eventually } from '../helpers/http.js'
import { spawnGateway } from '../helpers/child.js'

const TENANT = { 'x-svc-tenant-client-id': 'acme' }

async function setup (t: any) {
  const idp = await startIdp(t)
  const gw = await startTestGateway(t, harnessAuthEnv(idp))
  await eventually(() => fetch(`${gw.harnessUrl}/health/ready`).then(r => r.status), s => s === 200)
  const start = async (headers: Record<string, string>) => {
    const res = await fetch(`${gw.harnessUrl}/runs:start`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hi', mode: 'echo' }) })
    return { status: res.status, body: await res.json() as any }
  }
  return { idp, ...gw, start }
}

t.test('every 401 carries exactly the spec detail', async t => {
  const { idp, start } = await setup(t)
  const hs256 = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS256' }).setIssuer('https://idp.test/').setAudience('svc-harness').setExpirationTime('5m').sign(new TextEncoder().encode('k'.repeat(32)))
  const rows: Array<[string, Record<string, string>]> = [
    ['missing Bearer token', { ...TENANT }],
    ['missing Bearer token', { ...TENANT, authorization: 'Basic dXNlcjpwdw==' }],
    ['empty Bearer token', { ...TENANT, authorization: 'Bearer ' }],
    ['empty Bearer token', { ...TENANT, authorization: '' }],
    ['auth_failed:malformed', { ...TENANT, authorization: 'Bearer not-a-jwt' }],
    ['auth_failed:malformed', { ...TENANT, authorization: `Bearer ${hs256}` }],
    ['auth_failed:invalid_signature', { ...TENANT, authorization: `Bearer ${await idp.sign({}, { key: 'other' })}` }],
    ['auth_failed:expired', { ...TENANT, authorization: `Bearer ${await idp.sign({}, { expiresIn: -31 })}` }],
    ['auth_failed:wrong_issuer', { ...TENANT, authorization: `Bearer ${await idp.sign({}, { iss: 'https://evil.test/' })}` }],
    ['auth_failed:wrong_audience', { ...TENANT, authorization: `Bearer ${await idp.sign({}, { aud: 'another-api' })}` }],
    ['auth_failed:tenant_unresolved', { authorization: `Bearer ${await idp.sign()}` }]
  ]
  for (const [detail, headers] of rows) {
    const res = await start(headers)
    t.equal(res.status, 401, detail)
    t.same(res.body, { detail }, detail)
  }
})

t.test('a valid token passes; 30 s of leeway on exp', async t => {
  const { idp, start } = await setup(t)
  t.equal((await start({ ...TENANT, authorization: `Bearer ${await idp.sign()}` })).status, 202)
  t.equal((await start({ ...TENANT, authorization: `Bearer ${await idp.sign({}, { expiresIn: -20 })}` })).status, 202, 'expired 20 s ago is within the leeway')
})

t.test('every /runs route is gated; health is not', async t => {
  const { harnessUrl } = await setup(t)
  for (const [method, path] of [['POST', '/runs'], ['POST', '/runs:start'], ['GET', '/runs/run-x'], ['GET', '/runs/run-x/stream'], ['POST', '/runs/run-x/cancel']] as const) {
    const res = await fetch(`${harnessUrl}${path}`, { method, headers: TENANT, ...(method === 'POST' ? { body: '{"message":"x"}' } : {}) })
    t.equal(res.status, 401, `${method} ${path}`)
  }
  t.equal((await fetch(`${harnessUrl}/health`)).status, 200)
  t.equal((await fetch(`${harnessUrl}/health/ready`)).status, 200)
})

t.test('readiness waits for the key set; start-up fails fast when the settings are incomplete', async t => {
  const gw = spawnGateway(t, ['start'], { DATA_DIR: t.testdir(), SVC_HARNESS_AUTH_ENABLED: 'true', IDP_JWKS_URL: 'http://127.0.0.1:9/jwks', IDP_RS256_AUDIENCE: 'a' })
  t.not(await gw.exit, 0, 'a non-zero exit')
  t.match(gw.stderr(), /IDP_ISSUER is required when SVC_HARNESS_AUTH_ENABLED=true/)

  const unreachable = await startTestGateway(t, { SVC_HARNESS_AUTH_ENABLED: 'true', IDP_ISSUER: 'https://idp.test/', IDP_JWKS_URL: 'http://127.0.0.1:9/jwks.json', IDP_RS256_AUDIENCE: 'a' })
  const ready = await fetch(`${unreachable.harnessUrl}/health/ready`)
  t.equal(ready.status, 503, 'not ready while the key set cannot be fetched')
  t.match(await ready.json(), { status: 'not_ready', components: { lmdb: { ready: true }, jwks: { ready: false } } })
})
