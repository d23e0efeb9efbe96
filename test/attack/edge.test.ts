import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { NEWER_UWS } from '../helpers/http.js'
import { render } from './support/json.js'
import { describeFigures, failures, measure } from './support/storm.js'
import { startTarget, type Target } from './support/target.js'
import { parseAnswer } from './support/wire.js'

/**
 * Row 13 of issue 38, the HTTP edge, against a real gateway with the
 * default HTTP_DRAIN_TIMEOUT_MS (10 s, the value that raced uWS 20.30's idle
 * timeout): `Expect: 100-continue` without a token, a tokenless body that
 * stalls, two different Content-Lengths, HTTP/1.0, a folded header line, a
 * request without Host. Each runs from many connections at once while an
 * honest telemetry client is measured.
 */
const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))
const BOUND_MS = 30_000
const COPIES = 8

interface Seen { text: string, closed: boolean, socket: Socket }

/** Writes `parts` (waiting `gapMs` between them) and reads until the server closes, `stop` matches, or the bound. */
function converse (port: number, parts: string[], stop?: RegExp, gapMs = 50): Promise<Seen> {
  return new Promise(resolve => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    let done = false
    const finish = (closed: boolean): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve({ text, closed, socket })
    }
    const timer = setTimeout(() => finish(false), BOUND_MS)
    socket.on('error', () => undefined)
    socket.on('data', d => {
      text += d.toString('latin1')
      if (stop?.test(text)) finish(false)
    })
    socket.on('close', () => finish(true))
    socket.once('connect', () => {
      void (async () => {
        for (const p of parts) {
          if (socket.destroyed) return
          socket.write(p)
          await new Promise(resolve => setTimeout(resolve, gapMs))
        }
      })()
    })
  })
}

const track = (): string => `POST /v1/asset/track HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Request-Timestamp: 1732262400\r\nX-Request-Id: edge-${randomUUID()}\r\n`
/** The final answer after any `100 Continue`, or undefined. */
const final = (text: string): ReturnType<typeof parseAnswer> => parseAnswer(Buffer.from(text, 'latin1'), true)

/** Runs `attacks` (each COPIES times at once) while an honest telemetry client sends; returns what each attack saw. */
async function underAttack (t: Test, target: Target, attacks: () => Promise<Seen[]>): Promise<Seen[]> {
  let over: () => void = () => {}
  const finished = new Promise<void>(resolve => { over = resolve })
  const honest = measure([{
    name: 'asset track',
    port: target.port,
    request: () => ({ method: 'POST', target: '/v1/asset/track', headers: [['Authorization', `Bearer ${target.device}`], ['Content-Type', 'application/json'], ['X-Request-Id', `edge-honest-${randomUUID()}`], ['X-Request-Timestamp', '1732262400']], body: render(example) })
  }], finished, 100)
  const seen = await attacks()
  over()
  const [figures] = await honest
  t.comment(`honest during the attack: ${describeFigures(figures!)}`)
  t.same(failures(figures!, [200]), {}, 'every honest telemetry request answered 200 meanwhile')
  for (const s of seen) s.socket.destroy()
  return seen
}

const copies = <T>(make: () => Promise<T>): Promise<T[]> => Promise.all(Array.from({ length: COPIES }, make))

t.test('a tokenless body that stalls gets its 401, then the close: never a close without an answer', async t => {
  const target = await startTarget(t, { HTTP_DRAIN_TIMEOUT_MS: '10000' })
  const seen = await underAttack(t, target, () => copies(() => converse(target.port, [`${track()}Content-Length: 100000\r\n\r\n{`])))
  for (const s of seen) {
    const answer = final(s.text)
    t.same([answer?.status, answer?.headers['connection'], (answer?.json as { message?: string } | undefined)?.message], [401, 'close', 'missing Bearer token'], 'the 401 came, saying the connection closes')
    t.ok(s.closed, 'then the gateway closed it')
  }
})

t.test('uWS itself: Expect: 100-continue gets 100 Continue before any handler runs, even without a token; the 401 follows the body, or its stall', async t => {
  const target = await startTarget(t)
  const body = 'x'.repeat(256 * 1024)
  const seen = await underAttack(t, target, async () => [
    // A client that waits for the 100 and then stalls: the 401 comes once the stall is seen, with a close.
    ...await copies(() => converse(target.port, [`${track()}Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`])),
    // A client that sends its body after the 100: the 401 comes after it, and the connection serves the next request.
    ...await copies(() => converse(target.port, [`${track()}Content-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`, body, 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'], /HTTP\/1\.1 200 [^]*\r\n\r\n[^]*\}$/, 300))
  ])
  for (const [i, s] of seen.entries()) {
    t.match(s.text, /^HTTP\/1\.1 100 Continue\r\n\r\n/, 'uWS sent 100 Continue itself, before the gateway could look at the token')
    const answer = final(s.text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''))
    t.equal(answer?.status, 401, 'then the gateway\'s 401')
    if (i < COPIES) t.equal(answer?.headers['connection'], 'close', 'the stalled one is closed after its answer')
    else t.match(s.text, /HTTP\/1\.1 401 [^]*HTTP\/1\.1 200 /, 'the one that sent its body keeps its connection: the next request is served')
  }
})

t.test('framing errors: 400 and a close for two Content-Lengths; what uWS decides itself for HTTP/1.0, a missing Host and obs-fold', async t => {
  const target = await startTarget(t)
  const smuggled = 'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'
  // Past 4 KiB uWS 20.30 gives up on a block it cannot parse at once instead of waiting for its idle timeout.
  const filler = 'x'.repeat(5000)
  const cases = [
    { name: 'two different Content-Lengths', head: `${track()}Authorization: Bearer ${target.device}\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\nhello`, gateway: 400, uws: undefined },
    // uWS closes a connection on which a request arrives while an answer is pending (docs/http.md): the smuggled one is never served, and the 400 never sent.
    { name: 'two different Content-Lengths with a request smuggled behind', head: `${track()}Authorization: Bearer ${target.device}\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\nhello${smuggled}`, gateway: undefined, uws: undefined },
    { name: 'HTTP/1.0 without Host', head: `GET /health HTTP/1.0\r\n\r\n${filler}`, gateway: undefined, uws: 505 },
    { name: 'HTTP/1.0 with Host', head: `GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n${filler}`, gateway: undefined, uws: 505 },
    { name: 'HTTP/1.1 without Host', head: `GET /health HTTP/1.1\r\n\r\n${filler}`, gateway: undefined, uws: 400 },
    { name: 'an obs-fold header line', head: `GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Folded: a\r\n b\r\n\r\n${filler}`, gateway: undefined, uws: 400 }
  ]
  const seen = await underAttack(t, target, async () => (await Promise.all(cases.map(c => copies(() => converse(target.port, [c.head]))))).flat())
  for (const [i, s] of seen.entries()) {
    const c = cases[Math.floor(i / COPIES)]!
    const answers = s.text.split(/^HTTP\/1\.[01] /m).length - 1
    t.ok(s.closed, `${c.name}: the connection is closed`)
    if (c.gateway !== undefined) {
      t.match(s.text, new RegExp(`^HTTP/1\\.1 ${c.gateway} `), `${c.name}: the gateway's ${c.gateway}`)
      t.equal(answers, 1, `${c.name}: and nothing smuggled behind it is served`)
    } else if (c.uws === undefined) {
      t.equal(answers, 0, `uWS itself: ${c.name}: closed without an answer, and nothing smuggled is served`)
    } else if (NEWER_UWS) {
      t.match(s.text, new RegExp(`^HTTP/1\\.1 ${c.uws} [^\\r]*\\r\\nConnection: close\\r\\n`), `uWS itself: ${c.name}: uWS 20.57 answers ${c.uws} with its own page`)
    } else {
      t.equal(s.text, '', `uWS itself: ${c.name}: uWS 20.30 closes without an answer; no handler runs, so the gateway cannot give one`)
    }
  }
})
