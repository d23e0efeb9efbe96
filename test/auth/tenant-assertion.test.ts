import t from 'tap'
import { createHash, createHmac } from 'node:crypto'
import { signTenantAssertion, verifyTenantAssertion, TENANT_ASSERTION_HEADER, TENANT_ASSERTION_TTL_S } from '../../src/auth/index.js'

const SECRET = 'assertion-secret-for-tests-0123456789abcdef'
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0)
const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2ln'

t.test('the assertion is exactly what docs/frontdoor.md tells another implementation to produce', async t => {
  const exp = NOW / 1000 + 60
  const digest = createHash('sha256').update(TOKEN, 'ascii').digest('base64url')
  const mac = createHmac('sha256', Buffer.from(SECRET, 'utf8')).update(`svc-tenant-assertion.v1\n${'acme-t'}\n${digest}\n${exp}`, 'utf8').digest('base64url')
  t.equal(signTenantAssertion(SECRET, 'acme-t', TOKEN, NOW), `v1.${exp}.${mac}`)
  t.equal(TENANT_ASSERTION_TTL_S, 60)
  t.equal(TENANT_ASSERTION_HEADER, 'x-svc-tenant-assertion', 'the header docs/frontdoor.md names (lower case, as uWS hands headers over)')
})

t.test('it verifies for its tenant, token and secret, until exp plus the leeway', async t => {
  const a = signTenantAssertion(SECRET, 'acme-t', TOKEN, NOW)
  const exp = NOW + 60_000
  t.ok(verifyTenantAssertion(SECRET, a, 'acme-t', TOKEN, 30, NOW))
  t.ok(verifyTenantAssertion(SECRET, a, 'acme-t', TOKEN, 30, exp + 30_000), 'at exp + leeway')
  t.notOk(verifyTenantAssertion(SECRET, a, 'acme-t', TOKEN, 30, exp + 31_000), 'past exp + leeway')
  t.notOk(verifyTenantAssertion(SECRET, a, 'acme-t', TOKEN, 0, exp + 1000), 'past exp without leeway')
  t.notOk(verifyTenantAssertion(SECRET, a, 'acme-u', TOKEN, 30, NOW), 'another tenant')
  t.notOk(verifyTenantAssertion(SECRET, a, 'acme-t', `${TOKEN}x`, 30, NOW), 'another token')
  t.notOk(verifyTenantAssertion(`${SECRET}x`, a, 'acme-t', TOKEN, 30, NOW), 'another secret')
})

t.test('an expiry further ahead than one TTL and the leeway is refused, even with a good MAC', async t => {
  t.ok(verifyTenantAssertion(SECRET, signTenantAssertion(SECRET, 'acme-t', TOKEN, NOW + 30_000), 'acme-t', TOKEN, 30, NOW), 'issued by a clock 30 s ahead')
  t.notOk(verifyTenantAssertion(SECRET, signTenantAssertion(SECRET, 'acme-t', TOKEN, NOW + 31_000), 'acme-t', TOKEN, 30, NOW), 'issued by a clock 31 s ahead')
})

t.test('anything but the exact format is refused', async t => {
  const good = signTenantAssertion(SECRET, 'acme-t', TOKEN, NOW)
  const [, exp, mac] = good.split('.') as [string, string, string]
  for (const bad of [undefined, '', good.slice(0, -1), `${good}A`, `v2.${exp}.${mac}`, `v1.0${exp}.${mac}`, `v1.${exp}.${mac.replace(/^./, '+')}`, `v1.-${exp}.${mac}`, `v1.${exp}.${mac}.x`, ` ${good}`, `v1.${exp}e0.${mac}`]) {
    t.notOk(verifyTenantAssertion(SECRET, bad, 'acme-t', TOKEN, 30, NOW), JSON.stringify(bad))
  }
})
