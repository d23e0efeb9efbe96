import t, { type Test } from 'tap'
import type { RequestContext } from '../../src/http/index.js'
import { NEWER_UWS, serve, rawConnect, readResponse } from '../helpers/http.js'

/**
 * Framing and header rules at the HTTP edge, sent byte for byte on raw
 * sockets. Where this uWS build decides before any JavaScript runs (see
 * docs/http.md), the test shows what a client gets and that nothing behind
 * the bad request is served.
 */

interface Served { port: number, hits: string[] }

async function counting (t: { teardown(fn: () => unknown): void }): Promise<Served> {
  const hits: string[] = []
  const handler = (ctx: RequestContext) => {
    hits.push(ctx.path)
    return { status: 200, body: { path: ctx.path, tenant: ctx.headers['x-svc-tenant-client-id'] ?? null } }
  }
  const { port } = await serve(t, [
    { method: 'POST', path: '/a', body: 'json', handler },
    { method: 'GET', path: '/a', handler },
    { method: 'GET', path: '/smuggled', handler },
    { method: 'GET', path: '/next', handler }
  ])
  return { port, hits }
}

/** Sends `raw` in one write (or `parts`, one write each) and reads until the server closes or `ms` pass. */
async function exchange (port: number, parts: Array<string | Buffer>, ms = 2000): Promise<{ text: string, closed: boolean }> {
  const socket = await rawConnect(port)
  let closed = false
  socket.once('end', () => { closed = true })
  socket.once('close', () => { closed = true })
  socket.on('error', () => { closed = true })
  const reading = readResponse(socket)
  for (const p of parts) {
    socket.write(p)
    if (parts.length > 1) await new Promise(resolve => setTimeout(resolve, 20))
  }
  const timer = setTimeout(() => socket.destroy(), ms)
  const text = await reading
  clearTimeout(timer)
  return { text, closed }
}

const smuggled = 'GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n'
const responses = (text: string): number => text.split(/^HTTP\/1\.1 /m).length - 1

/**
 * What a client gets when the uWS parser refuses a request itself: 20.57
 * answers with `status`, an HTML page of its own and a close; 20.30 closes
 * without a word. Either way no handler runs and nothing behind it is parsed.
 */
function refusedByUws (t: Test, text: string, status: number, what: string): void {
  if (NEWER_UWS) {
    t.match(text, new RegExp(`^HTTP/1\\.1 ${status} [^\\r]*\\r\\nConnection: close\\r\\n\\r\\n<h1>`), what)
    t.equal(responses(text), 1, `${what}: one answer, none for what follows`)
  } else t.equal(text, '', what)
}

t.test('two different Content-Length headers: 400 and closed, and the request smuggled behind them is never served', async t => {
  const s = await counting(t)
  for (const [first, second] of [['5', '40'], ['40', '5']]) {
    const body = 'hello' + smuggled
    const { text, closed } = await exchange(s.port, [`POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: ${first}\r\nContent-Length: ${second}\r\n\r\n${body}`])
    t.ok(closed, `${first} then ${second}: the connection is closed`)
    t.notMatch(text, /smuggled/, 'nothing answers for the smuggled request')
    t.ok(responses(text) <= 1, 'at most one answer on the connection')
  }
  t.same(s.hits, [], 'no handler ran')

  const alone = await exchange(s.port, ['POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\nhello'])
  t.match(alone.text, /^HTTP\/1\.1 400 /, 'a client that waits for the answer gets a 400')
  t.match(alone.text, /connection: close/i)
  t.match(alone.text, /"code":"malformed_request"/)
  t.ok(alone.closed)
})

t.test('the same Content-Length twice, padded or not, is refused the same way', async t => {
  const s = await counting(t)
  for (const second of ['5', '  5  ', '\t5']) {
    const { text, closed } = await exchange(s.port, [`POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length:${second}\r\n\r\n{"a":1}`])
    t.match(text, /^HTTP\/1\.1 400 /, JSON.stringify(second))
    t.ok(closed)
  }
  t.same(s.hits, [])
})

t.test('Content-Length with Transfer-Encoding: uWS refuses it before any handler runs, and nothing behind it is parsed', async t => {
  const s = await counting(t)
  for (const head of ['Content-Length: 5\r\nTransfer-Encoding: chunked', 'Transfer-Encoding: chunked\r\nContent-Length: 5']) {
    const { text, closed } = await exchange(s.port, [`POST /a HTTP/1.1\r\nHost: x\r\n${head}\r\n\r\n0\r\n\r\n${smuggled}`])
    refusedByUws(t, text, 400, 'the uWS parser decides (docs/http.md)')
    t.ok(closed, 'the connection is closed')
  }
  t.same(s.hits, [], 'neither request reached a handler')
})

t.test('uWS itself: a Content-Length that is not a number is refused by uWS after the handler, with the connection', async t => {
  const s = await counting(t)
  for (const length of ['5x', '-1', '5, 5', '99999999999999999999999']) {
    const { text, closed } = await exchange(s.port, [`POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\nhello${smuggled}`])
    refusedByUws(t, text, 400, JSON.stringify(length))
    t.ok(closed)
  }
  t.same(s.hits, [], 'the gateway refused them before any route ran; uWS closed first')
})

t.test('uWS itself: HTTP/1.0, or HTTP/1.1 without Host, never reaches the gateway', async t => {
  const s = await counting(t)
  for (const [head, status] of [['GET /a HTTP/1.0\r\nHost: x\r\n\r\n', 505], ['GET /a HTTP/1.0\r\n\r\n', 505], ['GET /a HTTP/1.1\r\n\r\n', 400]] as const) {
    const { text, closed } = await exchange(s.port, [head, 'x'.repeat(5000)])
    refusedByUws(t, text, status, JSON.stringify(head))
    t.ok(closed)
  }
  t.same(s.hits, [])
})

t.test('a Transfer-Encoding other than chunked, or an empty Content-Length, is 400 and closed', async t => {
  const s = await counting(t)
  const cases = [
    'Transfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'Transfer-Encoding: xchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'Content-Length: \r\n\r\n'
  ]
  for (const c of cases) {
    const { text, closed } = await exchange(s.port, [`POST /a HTTP/1.1\r\nHost: x\r\n${c}`])
    t.match(text, /^HTTP\/1\.1 400 /, JSON.stringify(c))
    t.ok(closed)
  }
  t.same(s.hits, [])
  const chunked = await exchange(s.port, ['POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n7\r\n{"a":1}\r\n0\r\n\r\n'])
  t.match(chunked.text, /^HTTP\/1\.1 200 /, 'chunked itself, in any case, is read')
})

t.test('a security-relevant header sent twice is 400 before any handler runs', async t => {
  const s = await counting(t)
  const twice: Array<[string, string, string]> = [
    ['Authorization', 'Bearer a', 'Bearer b'],
    ['Host', 'x', 'y'],
    ['X-Svc-Tenant-Client-Id', 'cA', 'cB'],
    ['X-Svc-Tenant-Client-Id', 'cA', ' cA '],
    ['x-svc-tenant-client-id', 'cA', 'cA'],
    ['X-Request-Id', 'r1', 'r2'],
    ['Content-Type', 'application/json', 'text/plain'],
    ['Last-Event-ID', '1', '2']
  ]
  for (const [name, a, b] of twice) {
    const host = name === 'Host' ? '' : 'Host: x\r\n'
    const { text } = await exchange(s.port, [`GET /a HTTP/1.1\r\n${host}${name}: ${a}\r\n${name.toUpperCase()}:${b}\r\nConnection: close\r\n\r\n`])
    t.match(text, /^HTTP\/1\.1 400 /, `${name} twice`)
    if (name === 'Host' && NEWER_UWS) refusedByUws(t, text, 400, 'uWS 20.57 refuses a second Host itself')
    else t.match(text, `"code":"malformed_request","message":"the ${name.toLowerCase()} header was sent more than once"`)
  }
  t.same(s.hits, [], 'no handler ran')
  const other = await exchange(s.port, ['GET /a HTTP/1.1\r\nHost: x\r\nAccept: a/b\r\nAccept: c/d\r\nConnection: close\r\n\r\n'])
  t.match(other.text, /^HTTP\/1\.1 200 /, 'other headers may repeat')
})

t.test('uWS strips the padding around a header value before the gateway sees it', async t => {
  const s = await counting(t)
  const { text } = await exchange(s.port, ['GET /a HTTP/1.1\r\nHost: x\r\nX-Svc-Tenant-Client-Id: \t cB \t\r\nConnection: close\r\n\r\n'])
  t.match(text, /"tenant":"cB"/, 'a padded value arrives unpadded (RFC 9110 5.5: the padding is not part of it)')
})

t.test('uWS itself: bytes 0x80-0xFF at either end of a header value are stripped as padding too; inside, they stay', async t => {
  const s = await counting(t)
  const ends = await exchange(s.port, [Buffer.concat([Buffer.from('GET /a HTTP/1.1\r\nHost: x\r\nX-Svc-Tenant-Client-Id: '), Buffer.from('\u00e9cB\u00a0'), Buffer.from('\r\nConnection: close\r\n\r\n')])])
  t.match(ends.text, /"tenant":"cB"/, 'é and a no-break space around cB are gone: this build compares signed chars with 33 (docs/http.md)')
  const inside = await exchange(s.port, [Buffer.concat([Buffer.from('GET /a HTTP/1.1\r\nHost: x\r\nX-Svc-Tenant-Client-Id: '), Buffer.from('c\u00e9B'), Buffer.from('\r\nConnection: close\r\n\r\n')])])
  t.match(inside.text, /"tenant":"c\u00e9B"/, 'inside the value they arrive')
})

t.test('a duplicate header on a request with a body is answered after the body, and the connection stays usable', async t => {
  const s = await counting(t)
  const body = '{"a":"' + 'x'.repeat(100_000) + '"}'
  const { text } = await exchange(s.port, [
    `POST /a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    'GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
  ])
  t.match(text, /^HTTP\/1\.1 400 /)
  t.match(text, /HTTP\/1\.1 200 [^]*"path":"\/next"/, 'the next request on the connection is served')
  t.same(s.hits, ['/next'])
})

t.test('a header block over 4096 bytes gets 431 when it arrives in one read (from uWS itself on 20.57); exactly 4096 is served', async t => {
  const s = await counting(t)
  const block = (size: number): string => {
    const head = 'GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: '
    return head + 'a'.repeat(size - head.length - 4) + '\r\n\r\n'
  }
  const fits = await exchange(s.port, [block(4096)])
  t.match(fits.text, /^HTTP\/1\.1 200 /)
  const over = await exchange(s.port, [block(4097)])
  t.match(over.text, /^HTTP\/1\.1 431 /)
  if (NEWER_UWS) refusedByUws(t, over.text, 431, 'uWS 20.57 enforces 4096 itself')
  else t.match(over.text, /"code":"header_fields_too_large"/)
  t.same(s.hits, ['/a'])
})

t.test('uWS itself: a header block over 4096 bytes in several reads is refused by uWS', async t => {
  const s = await counting(t)
  const line = 'GET /a HTTP/1.1\r\n'
  const rest = 'Host: x\r\nX-Big: ' + 'a'.repeat(4200) + '\r\n\r\n'
  const { text, closed } = await exchange(s.port, [line, rest])
  refusedByUws(t, text, 431, 'its 4 KiB header buffer overflows')
  t.ok(closed)
  t.same(s.hits, [])
})

t.test('uWS itself: past its count of header lines (48 on 20.30, 98 on 20.57) a request never reaches the gateway', async t => {
  const s = await counting(t)
  const lines = (n: number): string => Array.from({ length: n }, (_, i) => `X-H${i}: v\r\n`).join('')
  const most = NEWER_UWS ? 98 : 48
  const ok = await exchange(s.port, [`GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${lines(most - 2)}\r\n`])
  t.match(ok.text, /^HTTP\/1\.1 200 /, `${most} header lines are served`)
  // 20.30 waits for more of what it takes for an unfinished block: it closes at its idle timeout
  // (about 10 s), or at once when what it holds passes 4 KiB, as here.
  const { text, closed } = await exchange(s.port, [`GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${lines(most - 1)}\r\n`, 'x'.repeat(5000)])
  refusedByUws(t, text, 431, `${most + 1} header lines`)
  t.ok(closed)
  t.same(s.hits, ['/a'])
})

t.test('uWS itself: a bare CR or LF, a folded line, a NUL or a space before the colon never reaches the gateway, nor does what follows it', async t => {
  const s = await counting(t)
  // 20.57 answers a bare CR with 431, as if the line never ended.
  for (const [bad, status] of [['X-A: a\nX-B: b', 400], ['X-A: a\rX-B: b', 431], ['X-A: a\r\n b', 400], ['X-A: a\u0000b', 400], ['X-A : a', 400]] as const) {
    const { text, closed } = await exchange(s.port, [`GET /a HTTP/1.1\r\nHost: x\r\n${bad}\r\n\r\n${smuggled}`, 'x'.repeat(5000)])
    refusedByUws(t, text, status, JSON.stringify(bad))
    t.ok(closed)
  }
  t.same(s.hits, [])
})
