import t from 'tap'
import { SignJWT } from 'jose'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, writeJson } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { readSse } from '../helpers/sse.js'
import { freePort, selfTrustingHarness } from '../helpers/ports.js'

const HS_SECRET = 'a-shared-secret-for-services-0123456789'

/** One gateway whose harness trusts this gateway's own keys, with orgs acme (tenant acme-t) and initech. */
async function setup (t: any) {
  const port = await freePort()
  const dir = t.testdir()
  const orgs = writeJson(dir, 'orgs.json', { acme: { tenant: 'acme-t', members: ['web-user', 'svc-billing'] }, initech: { tenant: 'initech-t', members: ['someone-else'] } })
  const gw = await startTestGateway(t, {
    ...selfTrustingHarness(port, orgs),
    FRONTDOOR_HS256_SECRET: HS_SECRET
  }, [{ client_id: 'web-user', client_secret: 'web-secret', audiences: ['harness'], scopes: ['runs'] }, { client_id: 'outsider', client_secret: 'o-secret', audiences: ['harness'], scopes: ['runs'] }])
  await eventually(() => fetch(`${gw.harnessUrl}/health/ready`).then(r => r.status), s => s === 200)
  const door = (slug: string, path: string) => `${gw.url}/api/v1/orgs/${slug}/harness/${path}`
  return { ...gw, door }
}

t.test('RS256 user token: passed through; the org tenant is set and the body tenant ignored', async t => {
  const { url, door, harnessUrl } = await setup(t)
  const token = await login(url, { client_id: 'web-user', client_secret: 'web-secret' }, 'harness')
  const res = await fetch(door('acme', 'runs'), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'via the door', mode: 'echo', tenant_id: 'initech-t' }) })
  t.equal(res.status, 200)
  const record = await res.json() as any
  t.match(record, { tenant_id: 'acme-t', status: 'succeeded', result: { output: 'via the door' } })
  const direct = await fetch(`${harnessUrl}/runs/${record.run_id}`)
  t.equal(direct.status, 401, 'the harness port itself still demands a token')
  const viaDoor = await fetch(door('acme', `runs/${record.run_id}`), { headers: { authorization: `Bearer ${token}` } })
  t.equal((await viaDoor.json() as any).run_id, record.run_id)
})

t.test('HS256 service token: exchanged for an RS256 token of this service', async t => {
  const { door } = await setup(t)
  const hs = await new SignJWT({ client_id: 'svc-billing' }).setProtectedHeader({ alg: 'HS256' }).setSubject('svc-billing').setExpirationTime('5m').sign(new TextEncoder().encode(HS_SECRET))
  const res = await fetch(door('acme', 'runs:start'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${hs}` }, body: JSON.stringify({ message: 'svc', mode: 'echo', options: { steps: 3, delay_ms: 20 } }) })
  t.equal(res.status, 202)
  const { run_id: id } = await res.json() as any
  const stream = await fetch(door('acme', `runs/${id}/stream`), { headers: { authorization: `Bearer ${hs}` } })
  t.equal(stream.headers.get('content-type'), 'text/event-stream')
  const events = await readSse(stream)
  t.same(events.map(e => e.event), ['run.queued', 'run.started', 'echo.step', 'echo.step', 'echo.step', 'run.completed'], 'the stream is proxied live')
  const wrongSecret = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('svc-billing').setExpirationTime('5m').sign(new TextEncoder().encode('not-the-secret-0123456789abcdefghij'))
  const rejected = await fetch(door('acme', 'runs'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${wrongSecret}` }, body: '{"message":"x"}' })
  t.same([rejected.status, await rejected.json()], [401, { detail: 'auth_failed:invalid_signature' }])
})

t.test('a non-member gets 403 not_a_member:org; no token 401', async t => {
  const { url, door } = await setup(t)
  const outsider = await login(url, { client_id: 'outsider', client_secret: 'o-secret' }, 'harness')
  const res = await fetch(door('acme', 'runs'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${outsider}` }, body: '{"message":"x"}' })
  t.same([res.status, await res.json()], [403, { detail: 'not_a_member:org' }])
  const member = await login(url, { client_id: 'web-user', client_secret: 'web-secret' }, 'harness')
  const otherOrg = await fetch(door('initech', 'runs'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${member}` }, body: '{"message":"x"}' })
  t.equal(otherOrg.status, 403, 'a member of one org is not a member of another')
  const unknown = await fetch(door('no-such-org', 'runs'), { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${member}` }, body: '{"message":"x"}' })
  t.equal(unknown.status, 403, 'an unknown org looks the same as a foreign one')
  const none = await fetch(door('acme', 'runs'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":"x"}' })
  t.same([none.status, await none.json()], [401, { detail: 'missing Bearer token' }])
})

t.test('run links in answers through the door point at the door; on the harness port at the harness', async t => {
  const { url, door, harnessUrl } = await setup(t)
  const token = await login(url, { client_id: 'web-user', client_secret: 'web-secret' }, 'harness')
  const auth = { authorization: `Bearer ${token}` }
  const res = await fetch(door('acme', 'runs:start'), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'm', mode: 'echo', options: { steps: 2, delay_ms: 50 } }) })
  t.equal(res.status, 202)
  t.equal(res.headers.get('content-type'), 'application/json')
  const { run_id: id, links } = await res.json() as any
  const base = `/api/v1/orgs/acme/harness/runs/${id}`
  t.same(links, { self: base, stream: `${base}/stream`, cancel: `${base}/cancel` })
  const self = await fetch(`${url}${links.self}`, { headers: auth })
  t.equal((await self.json() as any).run_id, id, 'self is followed through the door')
  const cancelled = await fetch(`${url}${links.cancel}`, { method: 'POST', headers: auth })
  t.ok([200, 409].includes(cancelled.status), 'cancel is followed through the door')
  const events = await readSse(await fetch(`${url}${links.stream}`, { headers: auth }))
  t.ok(events.length > 0, 'stream is followed through the door')

  const direct = await fetch(`${harnessUrl}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json', ...auth, 'x-svc-tenant-client-id': 'acme-t' }, body: '{"message":"m","mode":"echo"}' })
  const answer = await direct.json() as any
  t.equal(answer.links.self, `/runs/${answer.run_id}`, 'a harness-port client gets harness paths')
})
