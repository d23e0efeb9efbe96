import t from 'tap'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { eventually } from '../helpers/http.js'
import { render } from './support/json.js'
import { judge, seedLine, Tally, type RouteRule } from './support/property.js'
import { DEVICE, INGEST_AUDIENCE, startTarget, TOPICS, type Target } from './support/target.js'
import { parseAnswer, type Outcome, type RawRequest } from './support/wire.js'

/**
 * Slow and idle clients against a real gateway: a few hundred connections
 * that send nothing, slowloris connections trickling their headers, and
 * authenticated uploads trickling their bodies, on both ports at once.
 * Meanwhile every other client is answered as it would be on an idle
 * gateway (bounded by a deadline that only a hang misses, never a timing
 * assertion), the process's memory stays under a ceiling, and what the
 * slow clients never finished is neither published nor left in storage.
 */
const IDLE = Number(process.env['ATTACK_SLOW_IDLE'] ?? 300)
const SLOWLORIS = 40
const SLOW_BODIES = 30
/** Far above what the gateway holds at rest (about 100 MiB); only a leak per connection reaches it. */
const RSS_CEILING_MIB = 512
/** An answer later than this is a hang, not a slow machine. */
const ANSWER_BOUND_MS = 30_000
/** How often a slow client sends its next few bytes. */
const TRICKLE_MS = 200

const tally = new Tally('slow clients and idle connections')
console.log(`# ${seedLine('test/attack/slow.test.ts')}`)
t.teardown(() => tally.record())

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))

function rssMiB (pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find(l => l.startsWith('VmRSS:'))!
  return Number(/(\d+)/.exec(line)![1]) / 1024
}

/** A connection the test holds open; `answer` is whatever the server sent it before it closed. */
interface Held { socket: Socket, received: Buffer[], closed: boolean, timer?: NodeJS.Timeout }

function hold (port: number, first: Buffer | string, then?: () => Buffer | string | undefined): Promise<Held> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    const held: Held = { socket, received: [], closed: false }
    socket.on('data', d => held.received.push(d))
    socket.on('error', () => undefined)
    socket.on('close', () => { held.closed = true; clearInterval(held.timer) })
    socket.once('connect', () => {
      if (first.length > 0) socket.write(first)
      if (then) {
        held.timer = setInterval(() => {
          const next = then()
          if (next !== undefined && !held.closed) socket.write(next)
        }, TRICKLE_MS)
      }
      resolve(held)
    })
    socket.once('error', reject)
  })
}

/** Headers trickled a few bytes at a time, never ending. */
function slowloris (port: number, path: string): Promise<Held> {
  let i = 0
  return hold(port, `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n`, () => `X-Slow-${i++}: a\r\n`)
}

/** Complete headers of an authenticated upload, then its body a little at a time, never reaching its length. */
function slowBody (port: number, head: string, length: number): Promise<Held> {
  return hold(port, `${head}Content-Length: ${length}\r\n\r\n`, () => Buffer.alloc(64, 0x20))
}

interface Legit { name: string, port: (target: Target) => number, request: (target: Target) => RawRequest, rule: RouteRule }

const LEGIT: Legit[] = [
  { name: 'GET /health', port: x => x.port, request: () => ({ method: 'GET', target: '/health' }), rule: { dialect: 'plain', ok: [200] } },
  { name: 'harness GET /health', port: x => x.harnessPort, request: () => ({ method: 'GET', target: '/health' }), rule: { dialect: 'harness', ok: [200] } },
  { name: 'login', port: x => x.port, request: () => ({ method: 'POST', target: '/api/v1/login', headers: [['Content-Type', 'application/json']], body: JSON.stringify({ grant_type: 'client_credentials', client_id: DEVICE.client_id, client_secret: DEVICE.client_secret, audience: INGEST_AUDIENCE }) }), rule: { dialect: 'oauth', ok: [200] } },
  { name: 'asset track', port: x => x.port, request: x => ({ method: 'POST', target: '/v1/asset/track', headers: [['Authorization', `Bearer ${x.device}`], ['Content-Type', 'application/json'], ['X-Request-Id', `slow-${randomUUID()}`], ['X-Request-Timestamp', '1732262400']], body: render(example) }), rule: { dialect: 'telemetry', ok: [200] } },
  { name: 'stream events', port: x => x.port, request: x => ({ method: 'POST', target: '/v1/stream/events', headers: [['Authorization', `Bearer ${x.device}`], ['Content-Type', 'multipart/form-data; boundary=b']], body: `--b\r\nContent-Disposition: form-data; name="envelope"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify({ schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: `evt-${randomUUID()}`, occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' } })}\r\n--b--\r\n` }), rule: { dialect: 'evidence', ok: [202] } },
  { name: 'harness POST /runs:start', port: x => x.harnessPort, request: x => ({ method: 'POST', target: '/runs:start', headers: [...x.harnessHeaders(x.user), ['Content-Type', 'application/json']], body: '{"message":"hi","mode":"echo"}' }), rule: { dialect: 'harness', ok: [202] } },
  { name: 'front door POST /runs:start', port: x => x.port, request: x => ({ method: 'POST', target: '/api/v1/orgs/acme/harness/runs:start', headers: [['Authorization', `Bearer ${x.user}`], ['Content-Type', 'application/json']], body: '{"message":"hi","mode":"echo"}' }), rule: { dialect: 'harness', ok: [202] } }
]

t.test('idle connections, slowloris and slow bodies: everyone else is answered, memory stays bounded, nothing half-sent is kept', async t => {
  const target = await startTarget(t)
  const pid = target.child.proc.pid!
  const rssAtStart = rssMiB(pid)
  const held: Held[] = []
  t.teardown(() => { for (const h of held) { clearInterval(h.timer); h.socket.destroy() } })

  for (let i = 0; i < IDLE; i++) held.push(await hold(i % 3 === 0 ? target.harnessPort : target.port, ''))
  for (let i = 0; i < SLOWLORIS; i++) {
    const [port, path] = [[target.port, '/v1/asset/track'], [target.port, '/v1/stream/events'], [target.harnessPort, '/runs'], [target.port, '/api/v1/login']][i % 4]! as [number, string]
    held.push(await slowloris(port, path))
  }
  const auth = `Authorization: Bearer ${target.device}\r\n`
  for (let i = 0; i < SLOW_BODIES; i++) {
    switch (i % 3) {
      case 0: held.push(await slowBody(target.port, `POST /v1/asset/track HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nX-Request-Id: slow-body-${i}\r\nX-Request-Timestamp: 1732262400\r\n`, 1024 * 1024)); break
      case 1: held.push(await slowBody(target.port, `POST /v1/stream/events HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: multipart/form-data; boundary=b\r\n`, 64 * 1024 * 1024)); break
      case 2: held.push(await slowBody(target.harnessPort, `POST /runs HTTP/1.1\r\nHost: 127.0.0.1\r\n${target.harnessHeaders(target.user).map(([n, v]) => `${n}: ${v}\r\n`).join('')}Content-Type: application/json\r\n`, 1024 * 1024)); break
    }
  }
  // The slow multipart uploads start with a real envelope, so the gateway is streaming media for them.
  for (const h of held.slice(IDLE + SLOWLORIS).filter((_, i) => i % 3 === 1)) {
    h.socket.write(`--b\r\nContent-Disposition: form-data; name="envelope"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify({ schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: `evt-${randomUUID()}`, occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' }, media: [{ ref: 'clip-0' }] })}\r\n--b\r\nContent-Disposition: form-data; name="media"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`)
  }
  tally.inputsTried += held.length

  const accepted = { telemetry: 0, evidence: 0, runs: 0 }
  for (let round = 0; round < 3; round++) {
    const outcomes = await Promise.all(LEGIT.map(async l => {
      const req = l.request(target)
      const outcome = await target.send(l.port(target), req, ANSWER_BOUND_MS)
      tally.count(outcome)
      return { l, outcome }
    }))
    for (const { l, outcome } of outcomes) {
      t.same([judge(l.rule, outcome), outcome.kind === 'answer' && outcome.status < 300], [undefined, true], `round ${round + 1}: ${l.name} is answered, with a success`)
      if (outcome.kind === 'answer' && outcome.status < 300) {
        if (l.name === 'asset track') accepted.telemetry++
        if (l.name === 'stream events') accepted.evidence++
        if (l.name.endsWith('/runs:start')) accepted.runs++
      }
    }
  }
  const rss = rssMiB(pid)
  t.ok(rss < RSS_CEILING_MIB, `the gateway holds ${rss.toFixed(0)} MiB with ${held.filter(h => !h.closed).length} slow or idle connections open (${rssAtStart.toFixed(0)} MiB at start; ceiling ${RSS_CEILING_MIB} MiB)`)

  // Whatever a slow client was told before it was cut off is an answer of its route, never a 5xx.
  const answered = held.map(h => parseAnswer(Buffer.concat(h.received), true)).filter((a): a is NonNullable<typeof a> => a !== undefined)
  for (const a of answered) tally.count(a as Outcome, false)
  t.same(answered.filter(a => a.status >= 500).map(a => [a.status, a.text.slice(0, 200)]), [], 'no slow client was answered with a 5xx')

  for (const h of held) { clearInterval(h.timer); h.socket.destroy() }
  t.equal(await tally.survived(target), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
  const objects = await eventually(async () => target.objects(), o => o.length === 0)
  t.same(objects, [], 'no object or partial file of an upload its client never finished')
  await target.settled()
  const telemetry = await target.published(TOPICS.telemetry)
  const evidence = await target.published(TOPICS.evidence)
  tally.storedAfterRefusal += objects.length + Math.max(0, telemetry.length - accepted.telemetry) + Math.max(0, evidence.length - accepted.evidence)
  t.equal(telemetry.length, accepted.telemetry, 'telemetry: only the other clients\' records')
  t.equal(evidence.length, accepted.evidence, 'evidence: only the other clients\' events, none of a slow upload')
  const runs = await eventually(async () => new Set((await target.published(TOPICS.runs)).map(m => m.key)), ids => ids.size >= accepted.runs)
  t.equal(runs.size, accepted.runs, 'runs: only the other clients\' runs; no slow /runs body started one')
})
