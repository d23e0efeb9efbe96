import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import { SignJWT } from 'jose'
import '../helpers/no-keepalive.js'
import { startTestGateway, writeJson } from '../helpers/gateway.js'
import { startIdp } from '../helpers/jwks.js'
import { startRecorder } from '../helpers/recorder.js'

const HS_SECRET = 'a-shared-secret-for-services-0123456789'
const T0 = Date.parse('2026-11-22T08:00:00Z')
const MIN = 60_000

// The door's expiry as the running gateway checks it, with tokens that were
// valid when signed: only the wall clock moves (faked Date; timers and I/O
// run for real). An HS256 token is exchanged for a fresh RS256 one, so only
// the door's own check can refuse an expired one (tenancy.test.ts).
t.test('a token valid when signed: accepted until exp plus the 30 s leeway, 401 auth_failed:expired after, and a day later', async t => {
  const clock = FakeTimers.install({ toFake: ['Date'], now: T0 })
  t.teardown(() => clock.uninstall())
  const idp = await startIdp(t)
  const harness = await startRecorder(t)
  const orgs = writeJson(t.testdir(), 'orgs.json', { acme: { tenant: 'acme-t', members: ['user-1', 'svc-billing'] } })
  const gw = await startTestGateway(t, { ROLES: 'auth,frontdoor', HARNESS_URL: harness.url, ORGS_FILE: orgs, FRONTDOOR_JWKS_URL: idp.jwksUrl, FRONTDOOR_HS256_SECRET: HS_SECRET })
  const call = async (token: string): Promise<{ status: number, body: unknown }> => {
    const res = await fetch(`${gw.url}/api/v1/orgs/acme/harness/runs/run-1`, { headers: { authorization: `Bearer ${token}` } })
    return { status: res.status, body: await res.json() }
  }
  // Both signed at T0, valid for five minutes.
  const tokens: Array<[string, string]> = [
    ['HS256', await new SignJWT({ client_id: 'svc-billing' }).setProtectedHeader({ alg: 'HS256' }).setSubject('svc-billing').setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(HS_SECRET))],
    ['RS256', await idp.sign({}, { expiresIn: 300 })]
  ]
  const expired = { status: 401, body: { detail: 'auth_failed:expired' } }
  for (const [alg, token] of tokens) {
    clock.setSystemTime(T0)
    t.equal((await call(token)).status, 200, `${alg}: accepted when signed`)
    clock.setSystemTime(T0 + 5 * MIN + 29_000)
    t.equal((await call(token)).status, 200, `${alg}: 29 s past exp, within the leeway`)
    const before = harness.requests.length
    clock.setSystemTime(T0 + 5 * MIN + 31_000)
    t.strictSame(await call(token), expired, `${alg}: 31 s past exp`)
    clock.setSystemTime(T0 + 24 * 60 * MIN)
    t.strictSame(await call(token), expired, `${alg}: a day later`)
    t.equal(harness.requests.length, before, `${alg}: the expired calls never reached the harness`)
  }
})
