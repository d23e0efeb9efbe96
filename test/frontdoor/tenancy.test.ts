import t from 'tap'
import { SignJWT } from 'jose'
import '../helpers/no-keepalive.js'
import { verifyTenantAssertion } from '../../src/auth/index.js'
import { startTestGateway, login, writeJson } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { startIdp } from '../helpers/jwks.js'
import { startRecorder } from '../helpers/recorder.js'
import { readSse } from '../helpers/sse.js'
import { freePort, selfTrustingHarness } from '../helpers/ports.js'

const HS_SECRET = 'a-shared-secret-for-services-0123456789'
const ASSERTION_SECRET = 'assertion-secret-for-tests-0123456789abcdef'
const DAY_S = 24 * 3600
const nowS = (): number => Math.floor(Date.now() / 1000)

const hs256 = (exp: number, claims: Record<string, unknown> = { client_id: 'svc-billing' }): Promise<string> =>
  new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject('svc-billing').setIssuedAt(nowS() - 2 * DAY_S).setExpirationTime(exp).sign(new TextEncoder().encode(HS_SECRET))

/** A front door before a recording stand-in harness; user tokens come from a test IdP (sub `user-1`). */
async function recorded (t: any, env: Record<string, string> = {}) {
  const idp = await startIdp(t)
  const harness = await startRecorder(t)
  const orgs = writeJson(t.testdir(), 'orgs.json', { acme: { tenant: 'acme-t', members: ['user-1', 'svc-billing'] } })
  const gw = await startTestGateway(t, { ROLES: 'auth,frontdoor', HARNESS_URL: harness.url, ORGS_FILE: orgs, FRONTDOOR_JWKS_URL: idp.jwksUrl, FRONTDOOR_HS256_SECRET: HS_SECRET, ...env })
  const call = async (token: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.url}/api/v1/orgs/acme/harness/runs/run-1`, { headers: { authorization: `Bearer ${token}`, ...headers } })
    return { status: res.status, body: await res.json() as any }
  }
  return { idp, harness, call }
}

/** Front door and harness in one gateway; the harness trusts this gateway's keys. Orgs acme and initech. */
async function endToEnd (t: any, env: Record<string, string> = {}) {
  const port = await freePort()
  const orgs = writeJson(t.testdir(), 'orgs.json', { acme: { tenant: 'acme-t', members: ['web-user', 'svc-billing'] }, initech: { tenant: 'initech-t', members: ['initech-user'] } })
  const gw = await startTestGateway(t, {
    ...selfTrustingHarness(port, orgs),
    FRONTDOOR_HS256_SECRET: HS_SECRET,
    ...env
  }, [
    { client_id: 'web-user', client_secret: 'web-secret', audiences: ['harness'], scopes: ['runs'] },
    { client_id: 'initech-user', client_secret: 'i-secret', audiences: ['harness'], scopes: ['runs'] }
  ])
  await eventually(() => fetch(`${gw.harnessUrl}/health/ready`).then(r => r.status), s => s === 200)
  const door = (slug: string, path: string): string => `${gw.url}/api/v1/orgs/${slug}/harness/${path}`
  const acme = await login(gw.url, { client_id: 'web-user', client_secret: 'web-secret' }, 'harness')
  const initech = await login(gw.url, { client_id: 'initech-user', client_secret: 'i-secret' }, 'harness')
  return { ...gw, door, acme, initech }
}

t.test('a caller-sent tenant header or assertion never reaches the harness: the org decides', async t => {
  for (const secret of [undefined, ASSERTION_SECRET]) {
    const { idp, harness, call } = await recorded(t, secret ? { HARNESS_TENANT_ASSERTION_SECRET: secret } : {})
    const token = await idp.sign()
    const res = await call(token, { 'x-svc-tenant-client-id': 'initech-t', 'x-svc-tenant-assertion': 'v1.9999999999.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })
    t.equal(res.status, 200)
    const sent = harness.requests[0]!.headers
    t.equal(sent['x-svc-tenant-client-id'], 'acme-t', 'the org tenant, not the caller\'s')
    if (secret) t.ok(verifyTenantAssertion(secret, sent['x-svc-tenant-assertion'] as string, 'acme-t', token, 0), 'a fresh assertion of our own for the org tenant and the forwarded token')
    else t.equal(sent['x-svc-tenant-assertion'], undefined, 'no assertion without the secret, and never the caller\'s')
  }
})

t.test('with the secret, an HS256 caller\'s assertion is bound to the RS256 token minted for it', async t => {
  const { harness, call } = await recorded(t, { HARNESS_TENANT_ASSERTION_SECRET: ASSERTION_SECRET, IDP_RS256_AUDIENCE: 'harness' })
  const caller = await hs256(nowS() + 300)
  t.equal((await call(caller)).status, 200)
  const sent = harness.requests[0]!.headers
  const forwarded = /^Bearer (.+)$/.exec(sent.authorization!)![1]!
  t.not(forwarded, caller, 'the HS256 token itself is never forwarded')
  t.ok(verifyTenantAssertion(ASSERTION_SECRET, sent['x-svc-tenant-assertion'] as string, 'acme-t', forwarded, 0))
  t.notOk(verifyTenantAssertion(ASSERTION_SECRET, sent['x-svc-tenant-assertion'] as string, 'acme-t', caller, 0))
})

t.test('expired, absurdly long-lived and exp-less tokens are refused at the door and never forwarded', async t => {
  const { idp, harness, call } = await recorded(t)
  const rows: Array<[string, string, string]> = [
    ['HS256 expired a day ago', await hs256(nowS() - DAY_S), 'auth_failed:expired'],
    ['RS256 expired a day ago', await idp.sign({}, { expiresIn: -DAY_S }), 'auth_failed:expired'],
    ['HS256 expired 31 s ago (past the leeway)', await hs256(nowS() - 31), 'auth_failed:expired'],
    ['HS256 valid for ten years', await hs256(nowS() + 10 * 365 * DAY_S), 'auth_failed:malformed'],
    ['RS256 valid for ten years', await idp.sign({}, { expiresIn: 10 * 365 * DAY_S }), 'auth_failed:malformed'],
    ['HS256 without exp', await new SignJWT({ client_id: 'svc-billing' }).setProtectedHeader({ alg: 'HS256' }).setSubject('svc-billing').sign(new TextEncoder().encode(HS_SECRET)), 'auth_failed:malformed']
  ]
  for (const [name, token, detail] of rows) t.same(await call(token), { status: 401, body: { detail } }, name)
  t.same(harness.requests, [], 'nothing reached the harness')
  t.equal((await call(await hs256(nowS() - 20))).status, 200, 'expired 20 s ago is within the 30 s leeway')
})

t.test('end to end: an HS256 token expired a day ago gets 401 through the door, though the harness would take the token minted for it', async t => {
  const { door } = await endToEnd(t)
  const expired = await fetch(door('acme', 'runs'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${await hs256(nowS() - DAY_S)}` }, body: '{"message":"x","mode":"echo"}' })
  t.same([expired.status, await expired.json()], [401, { detail: 'auth_failed:expired' }])
  const fresh = await fetch(door('acme', 'runs'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${await hs256(nowS() + 300)}` }, body: '{"message":"x","mode":"echo"}' })
  t.equal(fresh.status, 200, 'the same caller with a live token gets through')
})

t.test('end to end: a member of one org naming another org\'s tenant gets its own tenant, and no other\'s runs', async t => {
  const { door, acme, initech } = await endToEnd(t)
  const theirs = await (await fetch(door('initech', 'runs'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${initech}` }, body: '{"message":"initech secret","mode":"echo"}' })).json() as any
  t.equal(theirs.tenant_id, 'initech-t')
  const spoof = { authorization: `Bearer ${acme}`, 'x-svc-tenant-client-id': 'initech-t' }
  const read = await fetch(door('acme', `runs/${theirs.run_id}`), { headers: spoof })
  t.same([read.status, await read.json()], [403, { detail: 'cross_tenant_replay:run' }])
  const mine = await (await fetch(door('acme', 'runs'), { method: 'POST', headers: { ...spoof, 'content-type': 'application/json' }, body: '{"message":"m","mode":"echo"}' })).json() as any
  t.equal(mine.tenant_id, 'acme-t')
})

t.test('end to end with the assertion secret: the door works, the harness port alone does not take the tenant header', async t => {
  const { door, harnessUrl, acme } = await endToEnd(t, { HARNESS_TENANT_ASSERTION_SECRET: ASSERTION_SECRET })
  const started = await fetch(door('acme', 'runs:start'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${acme}` }, body: JSON.stringify({ message: 'm', mode: 'echo', options: { steps: 2 } }) })
  t.equal(started.status, 202)
  const { run_id: id } = await started.json() as any
  const events = await readSse(await fetch(door('acme', `runs/${id}/stream`), { headers: { authorization: `Bearer ${acme}` } }))
  t.equal(events.at(-1)?.event, 'run.completed')
  const record = await fetch(door('acme', `runs/${id}`), { headers: { authorization: `Bearer ${acme}` } })
  t.match([record.status, await record.json()], [200, { run_id: id, tenant_id: 'acme-t' }])
  const direct = await fetch(`${harnessUrl}/runs/${id}`, { headers: { authorization: `Bearer ${acme}`, 'x-svc-tenant-client-id': 'acme-t' } })
  t.same([direct.status, await direct.json()], [401, { detail: 'auth_failed:tenant_unresolved' }], 'the same token and tenant, without the door\'s assertion')
})
