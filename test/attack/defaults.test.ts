import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnGateway, type Child } from '../helpers/child.js'
import { freePort } from '../helpers/ports.js'
import { DEVICE, INGEST_AUDIENCE, startTarget } from './support/target.js'
import { send, type Header, type Outcome } from './support/wire.js'

/**
 * Issue 38, rows 11, 12 and the `/metrics` item of 14: what the default
 * configuration lets a page on another site, a second gateway on the same
 * port, and an anonymous caller of `/metrics` do. Each attack runs against
 * real gateway processes; the honest client's answers are printed.
 */

const show = (o: Outcome): string => o.kind === 'answer' ? `${o.status} ${o.text.slice(0, 80)}` : o.kind

function dataDir (t: Tap): string {
  const dir = mkdtempSync(join(tmpdir(), 'gw-defaults-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}
interface Tap { teardown(fn: () => unknown): void }

async function exited (child: Child): Promise<{ code: number | null, stderr: string }> {
  return { code: await child.exit, stderr: child.stderr() }
}

/** The spec's default harness: auth off, on loopback. */
async function openGateway (t: Tap, env: Record<string, string> = {}): Promise<{ child: Child, port: number, harnessPort: number }> {
  const child = spawnGateway(t, ['start'], { DATA_DIR: dataDir(t), LOG_LEVEL: 'info', ...env })
  const listening = await child.waitFor('gateway listening')
  return { child, port: listening['port'] as number, harnessPort: listening['harnessPort'] as number }
}

t.test('row 11: a page on another site cannot cancel or read runs of the default (open, loopback) harness', async t => {
  const { harnessPort } = await openGateway(t)
  const own = `127.0.0.1:${harnessPort}`
  const started = await send(harnessPort, { method: 'POST', target: '/runs:start', headers: [['Content-Type', 'application/json']], body: JSON.stringify({ message: 'long', mode: 'echo', options: { steps: 400, delay_ms: 50 } }) })
  t.equal(started.kind === 'answer' && started.status, 202, 'the honest client starts a long run')
  const runId = (started as { json: { run_id: string } }).json.run_id
  const cancel = (headers: Header[], body = ''): Promise<Outcome> => send(harnessPort, { method: 'POST', target: `/runs/${runId}/cancel`, headers, body })

  // What a browser sends for `fetch(url, { method: 'POST', mode: 'no-cors', body })` and for a form, from evil.example.
  const noCors = await cancel([['Host', own], ['Origin', 'http://evil.example'], ['Content-Type', 'text/plain;charset=UTF-8'], ['Sec-Fetch-Mode', 'no-cors']], 'x')
  t.match(noCors, { kind: 'answer', status: 403, json: { detail: 'origin_not_allowed' } }, 'a no-cors POST from another origin')
  const form = await cancel([['Host', own], ['Origin', 'http://evil.example'], ['Content-Type', 'application/x-www-form-urlencoded']], 'a=1')
  t.match(form, { kind: 'answer', status: 403, json: { detail: 'origin_not_allowed' } }, 'a form POST from another origin')
  const sandboxed = await cancel([['Host', own], ['Origin', 'null'], ['Content-Type', 'text/plain']])
  t.match(sandboxed, { kind: 'answer', status: 403, json: { detail: 'origin_not_allowed' } }, 'Origin: null (a sandboxed frame)')
  // An old browser's form sends no Origin: the body rule still holds.
  const noOrigin = await cancel([['Host', own], ['Content-Type', 'application/x-www-form-urlencoded']], 'a=1')
  t.match(noOrigin, { kind: 'answer', status: 415, headers: { 'accept-post': 'application/json' } }, 'a form POST without Origin')
  const bare = await cancel([['Host', own]])
  t.match(bare, { kind: 'answer', status: 415 }, 'a POST with neither a JSON type nor a custom header')

  // DNS rebinding: evil.example now resolves to 127.0.0.1, so the page's requests are same-origin with Host: evil.example.
  const rebound: Header[] = [['Host', `evil.example:${harnessPort}`]]
  for (const target of [`/runs/${runId}`, '/runs', `/runs/${runId}/stream`, '/console']) {
    t.match(await send(harnessPort, { method: 'GET', target, headers: rebound }, 5_000), { kind: 'answer', status: 403, json: { detail: 'host_not_allowed' } }, `rebound GET ${target.replace(runId, '{id}')}`)
  }
  t.match(await cancel([...rebound, ['Content-Type', 'application/json']]), { kind: 'answer', status: 403 }, 'a rebound POST with a JSON type')

  const honest = await send(harnessPort, { method: 'GET', target: `/runs/${runId}`, headers: [['Host', own]] })
  t.comment(`honest client after the attacks: GET /runs/{id} ${show(honest)}`)
  t.match(honest, { kind: 'answer', status: 200, json: { status: 'running' } }, 'the run is still running')
  for (const host of ['localhost', `localhost:${harnessPort}`, '[::1]:1', '10.1.2.3']) {
    t.match(await send(harnessPort, { method: 'GET', target: '/health', headers: [['Host', host]] }), { kind: 'answer', status: 200 }, `Host ${host} (loopback name or IP literal) answered`)
  }
  // The console's own request: same origin, a JSON type.
  const fromConsole = await cancel([['Host', own], ['Origin', `http://${own}`], ['Content-Type', 'application/json']])
  t.comment(`honest console cancel: ${show(fromConsole)}`)
  t.match(fromConsole, { kind: 'answer', status: 200, json: { status: 'cancelled' } })
})

t.test('row 11: harness auth off on a non-loopback address is refused at start unless HARNESS_ALLOW_OPEN=true, which logs a warning', async t => {
  const refused = await exited(spawnGateway(t, ['start'], { DATA_DIR: dataDir(t), HOST: '0.0.0.0' }))
  t.comment(`HOST=0.0.0.0 with harness auth off: exit ${refused.code}: ${refused.stderr.trim().split('\n').at(-1)}`)
  t.equal(refused.code, 1)
  t.match(refused.stderr, /SVC_HARNESS_AUTH_ENABLED=false on HOST=0\.0\.0\.0.*HARNESS_ALLOW_OPEN=true/)
  const open = await openGateway(t, { HOST: '0.0.0.0', HARNESS_ALLOW_OPEN: 'true' })
  t.ok(open.child.lines.some(l => l['level'] === 40 && String(l['msg']).startsWith('HARNESS_ALLOW_OPEN=true')), 'started, with a warning')
  t.match(await send(open.harnessPort, { method: 'GET', target: '/health' }), { kind: 'answer', status: 200 })
})

t.test('row 12: PORT equal to HARNESS_PORT is refused at start, naming both', async t => {
  const port = String(await freePort())
  const both = await exited(spawnGateway(t, ['start'], { DATA_DIR: dataDir(t), PORT: port, HARNESS_PORT: port }))
  t.equal(both.code, 1)
  t.match(both.stderr, `PORT and HARNESS_PORT are both ${port}`)
})

t.test('row 12: a second gateway on a port in use fails with EADDRINUSE naming it; the first keeps every connection', async t => {
  const first = await startTarget(t)
  const second = await exited(spawnGateway(t, ['start'], { DATA_DIR: dataDir(t), PORT: String(first.port) }))
  t.comment(`second gateway on PORT=${first.port}: exit ${second.code}: ${second.stderr.trim().split('\n').find(l => l.includes('EADDRINUSE'))}`)
  t.equal(second.code, 1)
  t.match(second.stderr, new RegExp(`EADDRINUSE: PORT=${first.port} on 127\\.0\\.0\\.1`))
  const harness = await exited(spawnGateway(t, ['start'], { DATA_DIR: dataDir(t), HARNESS_PORT: String(first.harnessPort) }))
  t.equal(harness.code, 1)
  t.match(harness.stderr, new RegExp(`EADDRINUSE: HARNESS_PORT=${first.harnessPort}`))
  // Workers share their ports with SO_REUSEPORT by design: the supervisor checks the ports before it forks them.
  const workers = await exited(spawnGateway(t, ['start'], { DATA_DIR: dataDir(t), PORT: String(first.port), WORKERS: '2' }))
  t.equal(workers.code, 1)
  t.match(workers.stderr, new RegExp(`EADDRINUSE: PORT=${first.port}`))

  const statuses: number[] = []
  for (let i = 0; i < 16; i++) {
    const login = await send(first.port, { method: 'POST', target: '/api/v1/login', headers: [['Content-Type', 'application/json']], body: JSON.stringify({ grant_type: 'client_credentials', client_id: DEVICE.client_id, client_secret: DEVICE.client_secret, audience: INGEST_AUDIENCE }) })
    statuses.push(login.kind === 'answer' ? login.status : 0)
  }
  t.comment(`honest logins on new connections after the attempts: ${statuses.filter(s => s === 200).length} of 16 answered 200`)
  t.same(statuses, Array(16).fill(200))
  t.equal(await first.alive(), undefined)
})

t.test('row 14: /metrics answers the holder of METRICS_TOKEN, or without one a caller on this machine only', async t => {
  const token = 'metrics-token-of-the-attack-suite-0123456789'
  const guarded = await startTarget(t, { METRICS_TOKEN: token })
  // A process with a PORT serves /metrics there only.
  const port = guarded.port
  t.match(await send(port, { method: 'GET', target: '/metrics' }), { kind: 'answer', status: 401 }, `${port}: no token`)
  t.match(await send(port, { method: 'GET', target: '/metrics', headers: [['Authorization', `Bearer ${token}x`]] }), { kind: 'answer', status: 401 }, `${port}: a wrong token`)
  t.match(await send(port, { method: 'GET', target: '/metrics', headers: [['Authorization', `Bearer ${guarded.device}`]] }), { kind: 'answer', status: 401 }, `${port}: an ingest token`)
  const ok = await send(port, { method: 'GET', target: '/metrics', headers: [['Authorization', `Bearer ${token}`]] })
  t.match(ok, { kind: 'answer', status: 200, text: /process_cpu_seconds_total/ }, `${port}: the token`)
  const flood = await Promise.all(Array.from({ length: 200 }, () => send(guarded.port, { method: 'GET', target: '/metrics' })))
  const health = await send(guarded.port, { method: 'GET', target: '/health' })
  t.comment(`200 anonymous /metrics at once: ${flood.filter(o => o.kind === 'answer' && o.status === 401).length} answered 401; honest /health then: ${show(health)}`)
  t.match(health, { kind: 'answer', status: 200 })

  const open = await openGateway(t)
  t.match(await send(open.port, { method: 'GET', target: '/metrics' }), { kind: 'answer', status: 200 }, 'no METRICS_TOKEN: a loopback caller is answered')
  t.match(await send(open.port, { method: 'GET', target: '/metrics', headers: [['X-Forwarded-For', '203.0.113.7']] }), { kind: 'answer', status: 403 }, 'no METRICS_TOKEN: a caller through a proxy is not')
})
