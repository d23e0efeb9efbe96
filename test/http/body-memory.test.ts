import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Socket } from 'node:net'
import '../helpers/no-keepalive.js'
import { spawnGateway, type Child } from '../helpers/child.js'
import { CLIENT, login } from '../helpers/gateway.js'
import { rawConnect, readResponse } from '../helpers/http.js'
import { harnessAuthEnv, startIdp } from '../helpers/jwks.js'

/**
 * Issue 12 point 8: 450 connections without a token, each sending 1 MiB to
 * /v1/asset/track or /runs, took a gateway from 91 to 540 MiB. Now the token
 * is checked on the headers and the bodies are discarded unread, and what
 * JSON bodies may hold together is bounded by HTTP_BODY_BUFFER_BYTES.
 * Measured on a child process: its peak resident memory (VmHWM) against a
 * bound derived from the budget, never a timing.
 */

const MiB = 1024 * 1024
const BUDGET = 16 * MiB
/** Room for what is not a JSON body: uWS's and the kernel's buffers, the collector's lag. */
const SLACK = 64 * MiB
const CONNECTIONS = 400

function memory (pid: number): { rss: number, peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024
  return { rss: kib('VmRSS'), peak: kib('VmHWM') }
}

async function gauge (url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1])
}

/** One request on its own connection, the body written in full; resolves with the answer's status line and body. */
async function post (port: number, path: string, headers: Record<string, string>, body: Buffer): Promise<string> {
  const socket: Socket = await rawConnect(port)
  socket.on('error', () => {})
  const head = Object.entries({ host: 'x', 'content-type': 'application/json', 'content-length': String(body.length), connection: 'close', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  const reading = readResponse(socket)
  socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`)
  socket.write(body)
  const text = await reading
  socket.destroy()
  return text
}

async function startGateway (t: { teardown(fn: () => unknown): void, testdir(): string }): Promise<{ gw: Child, url: string, port: number, harnessPort: number }> {
  const idp = await startIdp(t)
  const dir = t.testdir()
  const clients = join(dir, 'clients.json')
  writeFileSync(clients, JSON.stringify([CLIENT]))
  const gw = spawnGateway(t, ['start'], { DATA_DIR: join(dir, 'data'), AUTH_CLIENTS_FILE: clients, LOG_LEVEL: 'info', HTTP_BODY_BUFFER_BYTES: String(BUDGET), ...harnessAuthEnv(idp) })
  const line = await gw.waitFor('gateway listening')
  const port = line['port'] as number
  return { gw, url: `http://127.0.0.1:${port}`, port, harnessPort: line['harnessPort'] as number }
}

t.test(`${CONNECTIONS} connections without a token, 1 MiB each to /v1/asset/track and /runs: every one 401, memory bounded by the budget`, async t => {
  const { gw, url, port, harnessPort } = await startGateway(t)
  const body = Buffer.alloc(MiB, 0x20)
  body.write('{"asset_id":"a"}')
  // Warm up both routes and the metrics, so start-up allocations are behind us.
  await post(port, '/v1/asset/track', {}, body)
  await post(harnessPort, '/runs', {}, body)
  await fetch(`${url}/metrics`)
  const before = memory(gw.proc.pid!)

  const answers = await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => i % 2 === 0
    ? post(port, '/v1/asset/track', {}, body)
    : post(harnessPort, '/runs', {}, body)))
  const statuses = answers.map(a => /^HTTP\/1\.1 (\d{3})/.exec(a)?.[1] ?? a.slice(0, 40))
  t.same([...new Set(statuses)], ['401'], 'every one is answered 401')
  t.equal(answers.filter(a => a.endsWith('{"detail":"missing Bearer token"}')).length, CONNECTIONS / 2, 'the harness says why, in its own words')

  const after = memory(gw.proc.pid!)
  const grown = after.peak - before.rss
  t.ok(grown < BUDGET + SLACK, `peak resident memory grew by ${Math.round(grown / MiB)} MiB (bound ${(BUDGET + SLACK) / MiB} MiB)`)
  t.equal(await gauge(url, 'gateway_http_body_buffer_peak_bytes'), 0, 'not a byte of those bodies was held')
})

t.test('valid tokens past the budget: 503 overloaded with Retry-After, and bodies in memory never exceed HTTP_BODY_BUFFER_BYTES', async t => {
  const { gw, url, port } = await startGateway(t)
  const token = await login(url)
  const body = Buffer.alloc(MiB, 0x20)
  body.write('{"asset_id":"a"}')
  const before = memory(gw.proc.pid!)
  const answers = await Promise.all(Array.from({ length: 100 }, () => post(port, '/v1/asset/track', { authorization: `Bearer ${token}` }, body)))
  const overloaded = answers.filter(a => /^HTTP\/1\.1 503 /.test(a))
  t.ok(overloaded.length > 0, `${overloaded.length} of 100 were refused for memory`)
  t.match(overloaded[0], /retry-after: 1/i)
  t.ok(answers.every(a => /^HTTP\/1\.1 (503|400) /.test(a)), 'the others were read and judged (400: the record is invalid)')
  const peak = await gauge(url, 'gateway_http_body_buffer_peak_bytes')
  t.ok(peak > 0 && peak <= BUDGET, `bodies held at most ${peak} bytes at once`)
  t.equal(await gauge(url, 'gateway_http_body_buffer_bytes'), 0, 'and all of it was given back')
  // Each admitted body is held once as bytes (what the budget counts) and once more as the text JSON.parse reads.
  const grown = memory(gw.proc.pid!).peak - before.rss
  t.ok(grown < 2 * BUDGET + SLACK, `peak resident memory grew by ${Math.round(grown / MiB)} MiB (bound ${(2 * BUDGET + SLACK) / MiB} MiB)`)
})
