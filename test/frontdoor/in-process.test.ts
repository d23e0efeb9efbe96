import t from 'tap'
import { readFileSync } from 'node:fs'
import { request } from 'node:http'
import '../helpers/no-keepalive.js'
import { loadConfig } from '../../src/config/index.js'
import { FrontDoor } from '../../src/frontdoor/index.js'
import type { KeyStore } from '../../src/auth/index.js'
import { startTestGateway, login, writeJson } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { readSse, type SseEvent } from '../helpers/sse.js'
import { freePort, selfTrustingHarness } from '../helpers/ports.js'

/**
 * Without HARNESS_URL the front door serves the process's own harness
 * in-process (issue 38, row 2: each fronted feed cost three descriptors, the
 * client's, a loopback connection's and the harness's accepted one). What a
 * client sees is the same; what the kernel holds is not, and that is read
 * from outside, in /proc/net/tcp.
 */

const FEEDS = 20

/** TCP connections in ESTABLISHED state with `port` at either end, both ends counted (a loopback connection is two). */
function established (port: number): number {
  const hex = port.toString(16).toUpperCase().padStart(4, '0')
  let n = 0
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const [, local, remote, state] = line.trim().split(/\s+/)
      if (state === '01' && (local?.endsWith(`:${hex}`) === true || remote?.endsWith(`:${hex}`) === true)) n++
    }
  }
  return n
}

/** One gateway (all roles) whose harness trusts its own login keys; org acme is tenant acme-t. */
async function setup (t: any, env: Record<string, string> = {}) {
  const port = await freePort()
  const orgs = writeJson(t.testdir(), 'orgs.json', { acme: { tenant: 'acme-t', members: ['web-user'] } })
  const gw = await startTestGateway(t, { ...selfTrustingHarness(port, orgs), ...env }, [{ client_id: 'web-user', client_secret: 'web-secret', audiences: ['harness'], scopes: ['runs'] }])
  const token = await login(gw.url, { client_id: 'web-user', client_secret: 'web-secret' }, 'harness')
  const auth = { authorization: `Bearer ${token}` }
  const door = (path: string): string => `${gw.url}/api/v1/orgs/acme/harness/${path}`
  // Asked through the door: a probe of the harness port itself would be a connection to it.
  await eventually(() => fetch(door('health/ready'), { headers: auth }).then(r => r.status), s => s === 200)
  const aborts: AbortController[] = []
  t.teardown(() => { for (const a of aborts) a.abort() })
  const open = async (): Promise<Response> => {
    const abort = new AbortController()
    aborts.push(abort)
    return fetch(door('runs:watch'), { headers: auth, signal: abort.signal })
  }
  return { ...gw, auth, door, open }
}

t.test('in-process: feeds through the door hold no connection to the harness port, and the harness still bounds and serves them', async t => {
  const { gateway, auth, door, open } = await setup(t, { HARNESS_MAX_STREAMS_PER_TENANT: String(FEEDS) })
  const feeds = await Promise.all(Array.from({ length: FEEDS }, open))
  t.same(feeds.map(f => f.status), feeds.map(() => 200))
  t.ok(feeds.every(f => f.headers.get('content-type') === 'text/event-stream'))
  t.equal(established(gateway.harnessPort!), 0, `${FEEDS} open feeds, no connection to the harness port`)

  const over = await open()
  t.same([over.status, over.headers.get('retry-after'), await over.json()], [429, '5', { detail: 'too_many_streams' }], 'the harness\'s own stream bound, its answer and Retry-After')

  const started = await fetch(door('runs:start'), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ message: 'm', mode: 'echo' }) })
  const { run_id: id, links } = await started.json() as any
  t.equal(links.stream, `/api/v1/orgs/acme/harness/runs/${id}/stream`, 'links re-rooted under the door')
  const ended = (events: SseEvent[]): boolean => events.some(e => e.event === 'run.completed' && JSON.parse(e.data!).run_id === id)
  const seen = await readSse(feeds[0]!, ended)
  t.ok(ended(seen), 'a feed through the door follows the tenant\'s runs')
  const stream = await readSse(await fetch(door(`runs/${id}/stream`), { headers: auth }))
  t.same(stream.map(e => e.event).at(-1), 'run.completed', 'the run\'s stream through the door')
  t.equal(established(gateway.harnessPort!), 0, 'still none')
})

t.test('in-process: the harness gate still checks the forwarded token and tenant', async t => {
  const { door, auth } = await setup(t, { HARNESS_TENANT_ASSERTION_SECRET: 'assertion-secret-for-tests-0123456789abcdef' })
  const res = await fetch(door('runs'), { headers: auth })
  t.equal(res.status, 200, 'the door\'s assertion satisfies the gate')
  const record = await (await fetch(door('runs'), { method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'x-svc-tenant-client-id': 'other' }, body: JSON.stringify({ message: 'm', mode: 'echo' }) })).json() as any
  t.equal(record.tenant_id, 'acme-t', 'the org\'s tenant, not the caller\'s header')
  const bad = await fetch(door('runs'), { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{"message":' })
  t.same([bad.status, await bad.json()], [400, { detail: 'request body is not valid JSON' }], 'the harness\'s own body check, in its dialect')
})

t.test('in-process, open mode: a run start counts against the client\'s own address, not the loopback of a proxy', async t => {
  const port = await freePort()
  const orgs = writeJson(t.testdir(), 'orgs.json', { acme: { tenant: 'acme-t', members: ['web-user'] } })
  // Harness auth off and no assertion secret: the tenant is a header, so each client address holds at most one run.
  const gw = await startTestGateway(t, { PORT: String(port), AUTH_ISSUER: `http://127.0.0.1:${port}/`, ORGS_FILE: orgs, HARNESS_MAX_RUNS_IN_FLIGHT_PER_ADDRESS: '1' },
    [{ client_id: 'web-user', client_secret: 'web-secret', audiences: ['harness'], scopes: ['runs'] }])
  const token = await login(gw.url, { client_id: 'web-user', client_secret: 'web-secret' }, 'harness')
  const long = JSON.stringify({ message: 'm', mode: 'echo', options: { steps: 100, delay_ms: 1000 } })
  const post = (url: string, from: string, headers: Record<string, string>): Promise<number> => new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', localAddress: from, headers: { 'content-type': 'application/json', ...headers } }, res => { res.resume(); res.on('end', () => resolve(res.statusCode!)) })
    req.on('error', reject)
    req.end(long)
  })
  const viaDoor = `${gw.url}/api/v1/orgs/acme/harness/runs:start`
  t.equal(await post(viaDoor, '127.0.0.2', { authorization: `Bearer ${token}` }), 202, 'through the door from 127.0.0.2')
  t.equal(await post(viaDoor, '127.0.0.2', { authorization: `Bearer ${token}` }), 503, '127.0.0.2 holds its one run')
  t.equal(await post(`${gw.harnessUrl}/runs:start`, '127.0.0.1', { 'x-svc-tenant-client-id': 'acme-t' }), 202, '127.0.0.1 holds none: the door\'s runs are not counted against the loopback')
})

t.test('with HARNESS_URL set the door still proxies: one loopback connection per feed', async t => {
  const harnessPort = await freePort()
  const { gateway, open } = await setup(t, { HARNESS_PORT: String(harnessPort), HARNESS_URL: `http://127.0.0.1:${harnessPort}` })
  t.equal(gateway.harnessPort, harnessPort)
  const feeds = await Promise.all(Array.from({ length: 5 }, open))
  t.same(feeds.map(f => f.status), [200, 200, 200, 200, 200])
  t.ok(established(harnessPort) >= 2 * feeds.length, `${established(harnessPort)} connection ends on the harness port for ${feeds.length} feeds`)
})

t.test('in-process, a fronted row the harness does not serve fails the start', async t => {
  const config = loadConfig({ DATA_DIR: t.testdir(), LOG_LEVEL: 'silent' })
  const keys = { getKey: () => { throw new Error('not used') } } as unknown as KeyStore
  const route = { method: 'GET' as const, path: '/x', handler: () => undefined }
  const harness = (missing: string) => ({ local: (method: string, path: string) => `${method} ${path}` === missing ? undefined : { route, params: {}, limit: 1 } })
  t.throws(() => new FrontDoor(config, keys, harness('GET /runs:watch')), /fronts GET \/runs:watch/)
  t.doesNotThrow(() => new FrontDoor(config, keys, harness('none')))
})
