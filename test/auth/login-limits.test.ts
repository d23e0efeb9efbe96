import t from 'tap'
import '../helpers/no-keepalive.js'
import { startTestGateway, CLIENT, NO_SCOPE_CLIENT } from '../helpers/gateway.js'

const good = { grant_type: 'client_credentials', client_id: CLIENT.client_id, client_secret: CLIENT.client_secret, audience: 'evidence-gateway' }

async function post (url: string, body: unknown, raw?: string, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<{ status: number, body: any, headers: Headers }> {
  const res = await fetch(`${url}/api/v1/login`, { method: 'POST', headers, body: raw ?? JSON.stringify(body) })
  return { status: res.status, body: await res.json(), headers: res.headers }
}

t.test('one client\'s wrong secrets do not lock other clients behind the same address', async t => {
  const { url } = await startTestGateway(t, { AUTH_MAX_FAILURES: '3' })
  for (let i = 0; i < 5; i++) await post(url, { ...good, client_secret: 'guess' + i })
  t.equal((await post(url, good)).status, 429, 'the guessing client is locked')
  const other = await post(url, { ...good, client_id: NO_SCOPE_CLIENT.client_id, client_secret: NO_SCOPE_CLIENT.client_secret })
  t.equal(other.status, 200, 'another client from the same address is not')
})

t.test('behind a trusted proxy: the address comes from AUTH_CLIENT_ADDRESS_HEADER', async t => {
  const { url } = await startTestGateway(t, { AUTH_MAX_FAILURES: '3', AUTH_ADDRESS_MAX_FAILURES: '4', AUTH_CLIENT_ADDRESS_HEADER: 'X-Forwarded-For' })
  const from = (address: string) => ({ 'content-type': 'application/json', 'x-forwarded-for': address })
  for (let i = 0; i < 3; i++) await post(url, { ...good, client_secret: 'guess' + i }, undefined, from('spoofed, 198.51.100.9'))
  t.equal((await post(url, good, undefined, from('198.51.100.9'))).status, 429, 'locked where the guesses came from')
  t.equal((await post(url, good, undefined, from('203.0.113.7'))).status, 200, 'an outsider who knows the client_id cannot lock it out elsewhere')
  await post(url, { ...good, client_id: 'sprayed-id' }, undefined, from('198.51.100.9'))
  const reader = { ...good, client_id: NO_SCOPE_CLIENT.client_id, client_secret: NO_SCOPE_CLIENT.client_secret }
  t.equal((await post(url, reader, undefined, from('198.51.100.9'))).status, 429, 'four failures from one address lock that address for every client')
  t.equal((await post(url, reader, undefined, from('203.0.113.7'))).status, 200, 'and only that address')
})

t.test('a network spreading guesses over its addresses is limited as one: an IPv6 /64, an IPv4 /24', async t => {
  const { url } = await startTestGateway(t, { AUTH_MAX_FAILURES: '3', AUTH_ADDRESS_MAX_FAILURES: '4', AUTH_PREFIX_MAX_FAILURES: '5', AUTH_CLIENT_ADDRESS_HEADER: 'X-Forwarded-For' })
  const from = (address: string) => ({ 'content-type': 'application/json', 'x-forwarded-for': address })
  for (let i = 0; i < 5; i++) t.equal((await post(url, { ...good, client_secret: 'guess' }, undefined, from(`2001:db8:7:7::${i + 1}`))).status, 401, 'one guess from each of five addresses of a /64')
  t.equal((await post(url, good, undefined, from('2001:db8:7:7:ffff::42'))).status, 429, 'a sixth address of that /64 is refused, the right secret too')
  t.equal((await post(url, good, undefined, from('2001:db8:7:8::1'))).status, 200, 'the next /64 is not')
  for (let i = 0; i < 5; i++) await post(url, { ...good, client_secret: 'guess' }, undefined, from(`198.51.100.${i + 1}`))
  t.equal((await post(url, good, undefined, from('198.51.100.200'))).status, 429, 'nor is an IPv4 /24')
  t.equal((await post(url, good, undefined, from('198.51.101.1'))).status, 200)
})

t.test('repeated failures are rate limited with 429 and Retry-After, even with the right secret', async t => {
  const { url } = await startTestGateway(t, { AUTH_MAX_FAILURES: '3', AUTH_FAILURE_WINDOW_S: '60' })
  for (let i = 0; i < 3; i++) t.equal((await post(url, { ...good, client_secret: 'guess' + i })).status, 401)
  const limited = await post(url, good)
  t.equal(limited.status, 429)
  t.same(limited.body, { error: 'slow_down', error_description: 'too many failed logins; retry later' })
  t.ok(Number(limited.headers.get('retry-after')) > 0 && Number(limited.headers.get('retry-after')) <= 60)
})
