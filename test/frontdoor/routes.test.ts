import t from 'tap'
import { SignJWT } from 'jose'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, writeJson } from '../helpers/gateway.js'
import { startRecorder, type RecordedRequest } from '../helpers/recorder.js'
import { rawRequest } from '../helpers/raw-request.js'

const HS_SECRET = 'a-shared-secret-for-services-0123456789'
const DOOR = '/api/v1/orgs/acme/harness'

/**
 * A front door whose HARNESS_URL is a recording stand-in (with a base path),
 * beside a second recording server that plays "another host": nothing but
 * the fronted routes may ever reach the first, and nothing at all the second.
 */
async function setup (t: any, answer?: (req: RecordedRequest) => { status: number, body: unknown }) {
  const harness = await startRecorder(t, answer)
  const elsewhere = await startRecorder(t)
  const orgs = writeJson(t.testdir(), 'orgs.json', { acme: { tenant: 'acme-t', members: ['web-user', 'svc-billing'] } })
  const gw = await startTestGateway(t, {
    ROLES: 'auth,frontdoor',
    HARNESS_URL: `${harness.url}/base/`,
    ORGS_FILE: orgs,
    FRONTDOOR_HS256_SECRET: HS_SECRET,
    IDP_RS256_AUDIENCE: 'harness'
  }, [{ client_id: 'web-user', client_secret: 'web-secret', audiences: ['harness'], scopes: ['runs'] }])
  const rs256 = await login(gw.url, { client_id: 'web-user', client_secret: 'web-secret' }, 'harness')
  const hs256 = await new SignJWT({ client_id: 'svc-billing' }).setProtectedHeader({ alg: 'HS256' }).setSubject('svc-billing').setExpirationTime('5m').sign(new TextEncoder().encode(HS_SECRET))
  const port = gw.gateway.port!
  return { harness, elsewhere, port, rs256, hs256 }
}

t.test('no path reaches another host or an unfronted harness route: 404 before any token is used', async t => {
  const { harness, elsewhere, port, rs256, hs256 } = await setup(t)
  const other = `127.0.0.1:${elsewhere.port}`
  const hostile = [
    `//${other}/x`,
    `//${other}/runs`,
    `/\\${other}/x`,
    `/\\\\${other}/x`,
    `/\\/${other}/x`,
    `/%2f%2f${other}/x`,
    `/%2F%2F${other}/runs`,
    `/%5c%5c${other}/x`,
    `/%5C${other}/x`,
    `/http:%2f%2f${other}/x`,
    `/http://${other}/x`,
    `/@${other}/x`,
    `/%2e%2e/%2e%2e/x`,
    '/..%2f..%2fx',
    '/runs/%2e%2e/%2e%2e/admin',
    '/runs/..%2F..%2Fadmin',
    '/runs/run-1/../../admin',
    '/runs/run-1/%2e%2e/%2e%2e/admin',
    '/runs/..',
    '/runs/.',
    '/runs/.hidden',
    '/runs/run-1%2fcancel',
    '/runs/run-1%2Fstream',
    '/runs/%72un-1',
    '/runs/run-1\\stream',
    '/runs/run-1/stream/',
    '/runs/',
    '/runs//stream',
    '/runs:start/../../x',
    '/runs;x=1',
    '/RUNS',
    '/health/ready/x',
    '/metrics',
    '/',
    '',
    `/runs/${'a'.repeat(129)}`
  ]
  for (const path of hostile) {
    for (const [method, token] of [['GET', rs256], ['POST', hs256]] as const) {
      const res = await rawRequest(port, method, `${DOOR}${path}`, [`Authorization: Bearer ${token}`], method === 'POST' ? '{"message":"x"}' : '')
      t.equal(res.status, 404, `${method} ${path}`)
    }
  }
  t.same(elsewhere.requests, [], 'the other host got nothing')
  t.same(harness.requests, [], 'the harness got nothing either')
  const unauthenticated = await rawRequest(port, 'GET', `${DOOR}//${other}/x`)
  t.same([unauthenticated.status, JSON.parse(unauthenticated.body)], [404, { detail: 'route_not_found' }], 'the route is checked before the token')
})

t.test('each fronted route reaches the harness at its base path, built from the validated segments', async t => {
  const { harness, port, rs256 } = await setup(t)
  const rows = [
    ['GET', '/runs', '/base/runs'],
    ['POST', '/runs', '/base/runs'],
    ['POST', '/runs:start', '/base/runs:start'],
    ['GET', '/runs/run-0190a1b2-c3d4', '/base/runs/run-0190a1b2-c3d4'],
    ['GET', '/runs/run-1/stream', '/base/runs/run-1/stream'],
    ['GET', '/runs:watch', '/base/runs:watch'],
    ['POST', '/runs/run-1/cancel', '/base/runs/run-1/cancel'],
    ['GET', '/skills?tenant=acme', '/base/skills?tenant=acme'],
    ['GET', '/health', '/base/health'],
    ['GET', '/health/ready', '/base/health/ready']
  ] as const
  for (const [method, path, upstream] of rows) {
    const res = await rawRequest(port, method, `${DOOR}${path}`, [`Authorization: Bearer ${rs256}`], method === 'POST' ? '{"message":"x"}' : '')
    t.equal(res.status, 200, `${method} ${path}`)
    t.match(harness.requests.at(-1), { method, url: upstream }, `${method} ${path} → ${upstream}`)
  }
  t.equal(harness.requests.length, rows.length)
})

t.test('the console\'s pages and files are open rows: served without a token, and nothing of the caller\'s is forwarded', async t => {
  const { harness, port, rs256 } = await setup(t)
  const rows = [
    ['/console', '/base/console'],
    ['/console/runs/run-0190a1b2-c3d4', '/base/console/runs/run-0190a1b2-c3d4'],
    ['/console/assets/main.js', '/base/console/assets/main.js']
  ] as const
  for (const [path, upstream] of rows) {
    for (const slug of ['acme', 'no-such-org']) {
      const res = await rawRequest(port, 'GET', `/api/v1/orgs/${slug}/harness${path}?t=1`, [`Authorization: Bearer ${rs256}`, 'X-Svc-Tenant-Client-Id: acme-t', 'Last-Event-ID: 3'])
      t.equal(res.status, 200, `${slug} ${path}`)
      const sent = harness.requests.at(-1)!
      t.equal(sent.url, upstream)
      t.notOk('authorization' in sent.headers || 'x-svc-tenant-client-id' in sent.headers || 'last-event-id' in sent.headers, 'no token, tenant or other header of the caller\'s')
    }
    t.equal((await rawRequest(port, 'GET', `${DOOR}${path}`)).status, 200, `${path} without any token`)
  }
  for (const path of ['/console/', '/console/assets/.hidden', '/console/assets/a/b', '/console/runs/run-1/stream', '/console/other']) {
    t.equal((await rawRequest(port, 'GET', `${DOOR}${path}`)).status, 404, path)
  }
  t.equal((await rawRequest(port, 'POST', `${DOOR}/console`, [], '{}')).status, 405)
})

t.test('a known path with another method is 405, not forwarded', async t => {
  const { harness, port, rs256 } = await setup(t)
  for (const [method, path, allow] of [['GET', '/runs:start', 'POST'], ['POST', '/runs/run-1', 'GET'], ['GET', '/runs/run-1/cancel', 'POST'], ['POST', '/health', 'GET']] as const) {
    const res = await rawRequest(port, method, `${DOOR}${path}`, [`Authorization: Bearer ${rs256}`], method === 'POST' ? '{}' : '')
    t.same([res.status, JSON.parse(res.body)], [405, { detail: `method_not_allowed:${method}` }], `${method} ${path}`)
    t.match(res.head, new RegExp(`\r\nallow: ${allow}\r\n`), `${method} ${path}: Allow names the route's method`)
  }
  t.same(harness.requests, [])
})

t.test('the query goes only to the routes that take one (the run list, a record\'s events); elsewhere it is dropped', async t => {
  const { harness, port, rs256 } = await setup(t)
  const auth = [`Authorization: Bearer ${rs256}`]
  t.equal((await rawRequest(port, 'GET', `${DOOR}/runs?status=running&cursor=abc%3D`, auth)).status, 200)
  t.equal(harness.requests.at(-1)!.url, '/base/runs?status=running&cursor=abc%3D')
  t.equal((await rawRequest(port, 'GET', `${DOOR}/runs/run-1?events_after=3`, auth)).status, 200)
  t.equal(harness.requests.at(-1)!.url, '/base/runs/run-1?events_after=3', 'a record\'s events are paged by query')
  t.equal((await rawRequest(port, 'GET', `${DOOR}/runs/run-1/cancel?x=@127.0.0.1:1/`, auth)).status, 405)
  t.equal((await rawRequest(port, 'GET', `${DOOR}/runs/run-1/stream?a=%2f%2fhost`, auth)).status, 200)
  t.equal(harness.requests.at(-1)!.url, '/base/runs/run-1/stream')
  const before = harness.requests.length
  const bad = await rawRequest(port, 'GET', `${DOOR}/runs?a="<x>"`, auth)
  t.same([bad.status, JSON.parse(bad.body)], [400, { detail: 'invalid_query' }], 'a query outside RFC 3986 characters is refused')
  t.equal(harness.requests.length, before)
})

t.test('an answer whose links are re-rooted is read whole up to 64 KiB; past that it is a 502, not a half-rewritten answer', async t => {
  const { harness, port, rs256 } = await setup(t, req => ({ status: 202, body: { run_id: 'run-1', links: { self: '/runs/run-1' }, pad: req.body === '"big"' ? 'x'.repeat(70 * 1024) : '' } }))
  const auth = [`Authorization: Bearer ${rs256}`]
  const small = await rawRequest(port, 'POST', `${DOOR}/runs:start`, auth, '"small"')
  t.same([small.status, JSON.parse(small.body)], [202, { run_id: 'run-1', links: { self: `${DOOR}/runs/run-1` }, pad: '' }])
  const big = await rawRequest(port, 'POST', `${DOOR}/runs:start`, auth, '"big"')
  t.equal(big.status, 502)
  t.equal(harness.requests.length, 2)
})
