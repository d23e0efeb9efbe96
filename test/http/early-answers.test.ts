import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import '../helpers/no-keepalive.js'
import { spawnGateway } from '../helpers/child.js'
import { CLIENT, NO_SCOPE_CLIENT, login } from '../helpers/gateway.js'
import { BOUNDARY, baseEnvelope, envelopePart, mediaPart, multipartBody } from '../helpers/multipart.js'

/**
 * Issue 20: every answer the evidence route gives before it has read the
 * media (a replay's 202, 401, 403, the 400s decided from the envelope, 413)
 * reaches Node's fetch and curl, with 1 MiB and 50 MiB bodies, on an idle
 * gateway and on a busy one.
 *
 * The gateways are child processes so that "busy" is the gateway's own
 * event loop: test/fixtures/busy-loop.mjs, preloaded into the child with
 * `--import`, blocks it 40 ms of every 50 ms, while the clients run at full
 * speed in this process (fetch) and in curl. A busy loop here would slow the
 * clients instead, and an in-process gateway would share it with them.
 */

const MiB = 1024 * 1024
const BUSY_LOOP = pathToFileURL(fileURLToPath(new URL('../fixtures/busy-loop.mjs', import.meta.url))).href
const SIZES = [MiB, 50 * MiB]

interface Outcome { status?: number, body?: string, replay?: string | null, error?: string }

/** One gateway under test: its URLs and tokens, idle or busy. */
interface Target { load: string, url: string, smallUrl: string, token: string, noScope: string, smallToken: string }

interface Case {
  name: string
  envelope: object
  sizes: number[]
  status: number
  expect: RegExp
  replay?: boolean
  /** Where it goes and with which token. */
  to: (target: Target) => { url: string, token: string }
}

const REPLAYED = 'evt-early-answer-replay'

const cases: Case[] = [
  { name: 'replay 202', envelope: baseEnvelope({ event_id: REPLAYED }), sizes: SIZES, status: 202, expect: /"status":"accepted"/, replay: true, to: g => ({ url: g.url, token: g.token }) },
  { name: '401', envelope: baseEnvelope(), sizes: SIZES, status: 401, expect: /"code":"unauthorized"/, to: g => ({ url: g.url, token: 'not-a-jwt' }) },
  { name: '403', envelope: baseEnvelope(), sizes: SIZES, status: 403, expect: /"code":"forbidden"/, to: g => ({ url: g.url, token: g.noScope }) },
  { name: '400 validation_error', envelope: baseEnvelope({ subject: {} }), sizes: SIZES, status: 400, expect: /"code":"validation_error"/, to: g => ({ url: g.url, token: g.token }) },
  { name: '400 unknown_event_type', envelope: baseEnvelope({ event_type: 'warehouse.not_allowed' }), sizes: SIZES, status: 400, expect: /"code":"unknown_event_type"/, to: g => ({ url: g.url, token: g.token }) },
  // EVIDENCE_MAX_BYTES is 2 MiB on the small gateway: 413 decided from Content-Length, 50 MiB still to come.
  { name: '413', envelope: baseEnvelope(), sizes: [50 * MiB], status: 413, expect: /"code":"payload_too_large"/, to: g => ({ url: g.smallUrl, token: g.smallToken }) }
]

interface Tap { teardown(fn: () => unknown): void, testdir(): string }

async function startChild (t: Tap, root: string, busy: boolean, env: Record<string, string> = {}): Promise<string> {
  const dir = mkdtempSync(join(root, 'gw-'))
  const clients = join(dir, 'clients.json')
  writeFileSync(clients, JSON.stringify([CLIENT, NO_SCOPE_CLIENT]))
  const gw = spawnGateway(t, ['start'], {
    DATA_DIR: dir,
    AUTH_CLIENTS_FILE: clients,
    LOG_LEVEL: 'info',
    ...(busy ? { NODE_OPTIONS: `--import=${BUSY_LOOP}` } : {}),
    ...env
  })
  const line = await gw.waitFor('gateway listening')
  return `http://127.0.0.1:${line['port'] as number}`
}

const headers = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}`, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` })

async function viaFetch (url: string, token: string, body: Buffer): Promise<Outcome> {
  try {
    const res = await fetch(`${url}/v1/stream/events`, { method: 'POST', headers: headers(token), body })
    return { status: res.status, body: await res.text(), replay: res.headers.get('idempotent-replay') }
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } }
    return { error: e.cause?.code ?? e.message }
  }
}

function viaCurl (url: string, token: string, body: Buffer): Promise<Outcome> {
  const args = ['-sS', '-D', '-', '--data-binary', '@-', `${url}/v1/stream/events`]
  for (const [k, v] of Object.entries(headers(token))) args.unshift('-H', `${k}: ${v}`)
  const curl = spawn('curl', args)
  let out = ''
  let err = ''
  curl.stdout.on('data', d => { out += d })
  curl.stderr.on('data', d => { err += d })
  curl.stdin.on('error', () => {})
  curl.stdin.end(body)
  return new Promise(resolve => curl.once('close', code => {
    if (code !== 0) return resolve({ error: `curl exit ${code}: ${err.trim()}` })
    // -D - writes every head, 100 Continue included, then the body.
    const blocks = out.split('\r\n\r\n')
    let i = 0
    while (/^HTTP\/1\.1 100 /.test(blocks[i] ?? '')) i++
    const head = blocks[i] ?? ''
    resolve({
      status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]),
      body: blocks.slice(i + 1).join('\r\n\r\n'),
      replay: /^idempotent-replay: (.*)$/mi.exec(head)?.[1] ?? null
    })
  }))
}

async function target (t: Tap, root: string, busy: boolean): Promise<Target> {
  const [url, smallUrl] = await Promise.all([startChild(t, root, busy), startChild(t, root, busy, { EVIDENCE_MAX_BYTES: String(2 * MiB) })])
  const [token, noScope, smallToken] = await Promise.all([login(url), login(url, NO_SCOPE_CLIENT), login(smallUrl)])
  const first = await viaFetch(url, token, multipartBody([envelopePart(baseEnvelope({ event_id: REPLAYED }))]))
  if (first.status !== 202) throw new Error(`the event to replay was not accepted: ${JSON.stringify(first)}`)
  return { load: busy ? 'busy' : 'idle', url, smallUrl, token, noScope, smallToken }
}

t.test('every early answer reaches fetch and curl, 1 MiB and 50 MiB, on an idle and on a busy gateway', async t => {
  const root = t.testdir()
  const targets = await Promise.all([target(t, root, false), target(t, root, true)])
  const media = Buffer.alloc(50 * MiB, 0x5a)
  for (const c of cases) {
    for (const size of c.sizes) {
      const body = multipartBody([envelopePart(c.envelope), mediaPart(media.subarray(0, size))])
      for (const g of targets) {
        const { url, token } = c.to(g)
        for (const [client, send] of [['fetch', viaFetch], ['curl', viaCurl]] as const) {
          const got = await send(url, token, body)
          const label = `${c.name}, ${size / MiB} MiB, ${client}, ${g.load} gateway`
          t.same({ status: got.status, error: got.error }, { status: c.status, error: undefined }, label)
          t.match(got.body, c.expect, `${label}: the answer's body`)
          if (c.replay === true) t.equal(got.replay, 'true', `${label}: Idempotent-Replay`)
        }
      }
    }
  }
})
