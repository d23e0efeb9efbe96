import t from 'tap'
import type { Socket } from 'node:net'
import type { Registry } from 'prom-client'
import { GatewayError, unauthorized } from '../../src/errors.js'
import { BodyBudget, type RequestContext, type Route } from '../../src/http/index.js'
import { serve, rawConnect, readResponse, until } from '../helpers/http.js'

/**
 * Answers given before the end of a body (401, 413, a replay...) reach the
 * client: the rest is read and discarded within bounds, then answered; past
 * the bounds, answered at once with `Connection: close`. JSON bodies wait
 * for the route's token check and share one memory budget.
 */

const MiB = 1024 * 1024

async function metric (registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = await registry.getSingleMetric(name)?.get()
  const v = m?.values.find(v => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
  return v?.value ?? 0
}

/** Writes `total` bytes of body in 64 KiB pieces, honouring backpressure, unless the socket closes. */
async function sendBody (socket: Socket, total: number): Promise<number> {
  const piece = Buffer.alloc(64 * 1024, 0x61)
  let sent = 0
  while (sent < total && !socket.destroyed) {
    const n = Math.min(piece.length, total - sent)
    sent += n
    if (!socket.write(piece.subarray(0, n))) {
      await new Promise<void>(resolve => {
        const done = (): void => { socket.off('drain', done); socket.off('close', done); resolve() }
        socket.once('drain', done)
        socket.once('close', done)
      })
    }
  }
  return sent
}

const refuseAtOnce: Route = { method: 'POST', path: '/upload', body: 'stream', bodyLimit: 1024 * MiB, errors: 'evidence', handler: () => { throw unauthorized('auth_failed:expired') } }

t.test('an answer given before the body ends is sent once the rest is read and discarded; the connection stays usable', async t => {
  const { port, registry } = await serve(t, [refuseAtOnce, { method: 'GET', path: '/next', handler: () => ({ status: 200, body: 'next' }) }])
  const socket = await rawConnect(port)
  const reading = readResponse(socket)
  socket.write(`POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${5 * MiB}\r\n\r\n`)
  t.equal(await sendBody(socket, 5 * MiB), 5 * MiB, 'the whole body could be sent: the server kept reading')
  socket.write('GET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  const text = await reading
  t.match(text, /^HTTP\/1\.1 401 [^]*www-authenticate: Bearer[^]*"code":"unauthorized"/)
  t.notMatch(text.split('\r\n\r\n')[0]!, /connection: close/i, 'the 401 keeps the connection')
  t.match(text, /HTTP\/1\.1 200 [^]*next$/, 'and the next request on it is served')
  t.ok(await metric(registry, 'gateway_http_drained_bytes_total', { server: 'test' }) > 4 * MiB, 'the discarded bytes are counted')
  t.equal(await metric(registry, 'gateway_http_drains_cut_short_total', { server: 'test' }), 0)
})

t.test('a declared rest over HTTP_DRAIN_MAX_BYTES is answered at once with Connection: close, and not read', async t => {
  const { port, registry } = await serve(t, [refuseAtOnce, { method: 'POST', path: '/small', body: 'json', bodyLimit: 1000, handler: () => ({ status: 200 }) }], { drainMaxBytes: MiB })
  for (const path of ['/upload', '/small']) {
    const socket = await rawConnect(port)
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${2 * MiB}\r\n\r\n`)
    const text = await readResponse(socket, /\}$/)
    t.match(text, path === '/upload' ? /^HTTP\/1\.1 401 / : /^HTTP\/1\.1 413 /, `${path}: answered without sending the body`)
    t.match(text, /connection: close/i)
    socket.destroy()
  }
  t.equal(await metric(registry, 'gateway_http_drains_cut_short_total', { server: 'test', reason: 'size' }), 2)
})

t.test('a chunked rest that passes HTTP_DRAIN_MAX_BYTES is cut there', async t => {
  const { port, registry } = await serve(t, [refuseAtOnce], { drainMaxBytes: MiB })
  const socket = await rawConnect(port)
  const reading = readResponse(socket, /\}$/)
  socket.write('POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n')
  const chunk = `10000\r\n${'a'.repeat(0x10000)}\r\n`
  for (let i = 0; i < 40; i++) socket.write(chunk)
  const text = await reading
  t.match(text, /^HTTP\/1\.1 401 [^]*connection: close/i)
  t.equal(await metric(registry, 'gateway_http_drains_cut_short_total', { server: 'test', reason: 'size' }), 1)
  socket.destroy()
})

t.test('a rest that does not come within HTTP_DRAIN_TIMEOUT_MS is cut, and the answer sent', async t => {
  const { port, registry } = await serve(t, [refuseAtOnce], { drainTimeoutMs: 100 })
  const socket = await rawConnect(port)
  socket.write('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nonly some of it')
  const text = await readResponse(socket, /\}$/)
  t.match(text, /^HTTP\/1\.1 401 [^]*connection: close/i)
  t.equal(await metric(registry, 'gateway_http_drains_cut_short_total', { server: 'test', reason: 'time' }), 1)
  socket.destroy()
})

t.test('authorize runs on the headers: a refused caller\'s JSON body is never buffered, and the handler never runs', async t => {
  const budget = new BodyBudget(8 * MiB)
  let checked = 0
  let handled = 0
  const { port } = await serve(t, [{
    method: 'POST',
    path: '/track',
    body: 'json',
    bodyLimit: 4 * MiB,
    authorize: ctx => { checked++; throw unauthorized(ctx.headers['authorization'] === undefined ? 'missing Bearer token' : 'auth_failed:malformed') },
    handler: () => { handled++; return { status: 200 } }
  }], { bodyBudget: budget })
  const socket = await rawConnect(port)
  const reading = readResponse(socket)
  socket.write(`POST /track HTTP/1.1\r\nHost: x\r\nContent-Length: ${3 * MiB}\r\nConnection: close\r\n\r\n`)
  await until(() => checked === 1)
  await sendBody(socket, 3 * MiB)
  t.match(await reading, /^HTTP\/1\.1 401 [^]*missing Bearer token/)
  t.equal(handled, 0)
  t.equal(budget.peak, 0, 'not a byte of the body was held')
})

t.test('an asynchronous authorize holds at most what came with the headers, from the open budget, and hands its result to the handler', async t => {
  const budget = new BodyBudget(8 * MiB)
  const open = new BodyBudget(MiB)
  let release: (claims: { client_id: string }) => void = () => {}
  const { port } = await serve(t, [{
    method: 'POST',
    path: '/track',
    body: 'json',
    bodyLimit: 4 * MiB,
    authorize: () => new Promise<{ client_id: string }>(resolve => { release = resolve }),
    handler: (ctx: RequestContext, claims: { client_id: string }) => ({ status: 200, body: { who: claims.client_id, size: (ctx.json() as { a: string }).a.length } })
  }], { bodyBudget: budget, openBodyBudget: open })
  const body = JSON.stringify({ a: 'x'.repeat(3 * MiB) })
  const socket = await rawConnect(port)
  const reading = readResponse(socket)
  socket.write(`POST /track HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`)
  const writing = (async () => { socket.write(body) })()
  await until(() => open.inUse > 0)
  const held = open.inUse
  t.ok(held < body.length, `before the check passes, only what already arrived is held (${held} bytes)`)
  t.equal(budget.inUse, 0, 'and not from the budget of vouched-for bodies')
  release({ client_id: 'cA' })
  await writing
  t.match(await reading, /^HTTP\/1\.1 200 [^]*\{"who":"cA","size":3145728\}/)
  t.equal(budget.peak, body.length, 'then the whole declared body is reserved at once')
  await until(() => budget.inUse === 0 && open.inUse === 0)
})

t.test('a route without a check takes its body from the open budget, byte by byte as it comes, never the whole declared length', async t => {
  const budget = new BodyBudget(8 * MiB)
  const open = new BodyBudget(64 * 1024)
  const { port, url } = await serve(t, [{ method: 'POST', path: '/login', body: 'json', bodyLimit: 16 * 1024, errors: 'oauth', handler: ctx => ({ status: 200, body: { size: ctx.rawBody!.length } }) }], { bodyBudget: budget, openBodyBudget: open })
  const sockets = await Promise.all(Array.from({ length: 8 }, () => rawConnect(port)))
  t.teardown(() => { for (const s of sockets) s.destroy() })
  for (const s of sockets) s.write('POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 16000\r\n\r\n{')
  await until(() => open.inUse === 8)
  t.equal(open.inUse, 8, 'eight trickling bodies declared 128 kB and hold the 8 bytes they sent')
  const res = await fetch(`${url}/login`, { method: 'POST', body: JSON.stringify({ a: 'x'.repeat(15000) }) })
  t.equal(res.status, 200, 'an honest body still fits')
  t.equal(budget.peak, 0, 'nothing unvouched ever touched the budget of the token-checked routes')
})

t.test('JSON bodies together never hold more than the budget: past it, 503 overloaded with Retry-After', async t => {
  const budget = new BodyBudget(2 * MiB)
  let entered = 0
  let open: () => void = () => {}
  const gate = new Promise<void>(resolve => { open = resolve })
  const { url } = await serve(t, [{
    method: 'POST',
    path: '/j',
    body: 'json',
    bodyLimit: MiB,
    errors: 'telemetry',
    authorize: () => ({}),
    handler: async () => { entered++; await gate; return { status: 200 } }
  }], { bodyBudget: budget })
  const body = JSON.stringify({ a: 'x'.repeat(900 * 1024) })
  const post = (): Promise<Response> => fetch(`${url}/j`, { method: 'POST', body })
  const held = [post(), post()]
  await until(() => entered === 2)
  const refused = await post()
  t.equal(refused.status, 503)
  t.equal(refused.headers.get('retry-after'), '1')
  t.same(await refused.json(), { status: 'error', message: 'too many request bodies in memory; retry shortly', detail: 'overloaded' })
  open()
  t.same((await Promise.all(held)).map(r => r.status), [200, 200])
  t.ok(budget.peak <= 2 * MiB, `peak ${budget.peak}`)
  t.equal(budget.inUse, 0, 'all of it is given back')
  t.equal((await post()).status, 200)
})

t.test('a refusal decided by the handler after the body was collected is sent at once', async t => {
  const { url } = await serve(t, [{ method: 'POST', path: '/j', body: 'json', handler: () => { throw new GatewayError('validation_error', 'no') } }])
  const res = await fetch(`${url}/j`, { method: 'POST', body: '{}' })
  t.equal(res.status, 400)
})

t.test('a body that stalls after an early answer gets that answer, then the close, before uWS\'s idle timeout could close it silently', async t => {
  const { port, registry } = await serve(t, [refuseAtOnce], { drainTimeoutMs: 120_000 })
  const socket = await rawConnect(port)
  t.teardown(() => socket.destroy())
  socket.write('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{')
  const text = await readResponse(socket, /\}$/)
  t.match(text, /^HTTP\/1\.1 401 [^]*connection: close[^]*"code":"unauthorized"/i, 'the 401 arrives, saying the connection closes')
  t.equal(await metric(registry, 'gateway_http_drains_cut_short_total', { server: 'test', reason: 'slow' }), 1)
})

t.test('a body that trickles below the minimum rate is refused 408 with a close; the time the gateway paused it does not count', async t => {
  let release: () => void = () => {}
  const { port } = await serve(t, [
    { method: 'POST', path: '/j', body: 'json', bodyLimit: 4096, errors: 'telemetry', authorize: () => ({}), handler: () => ({ status: 200 }) },
    { method: 'POST', path: '/late', body: 'json', bodyLimit: 4096, errors: 'telemetry', authorize: () => new Promise<object>(resolve => { release = () => resolve({}) }), handler: ctx => ({ status: 200, body: { size: ctx.rawBody!.length } }) }
  ], { bodyMinBytesPerS: 100 })
  const slow = await rawConnect(port)
  t.teardown(() => slow.destroy())
  slow.write('POST /j HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n')
  const trickle = setInterval(() => { if (!slow.destroyed) slow.write('a') }, 300)
  t.teardown(() => clearInterval(trickle))
  const text = await readResponse(slow, /\}$/)
  t.match(text, /^HTTP\/1\.1 408 [^]*connection: close/i)
  t.match(text, /"detail":"request_timeout"|"message":"the request body came slower than 100 bytes a second/)

  const paused = await rawConnect(port)
  t.teardown(() => paused.destroy())
  const reading = readResponse(paused, /\}$/)
  paused.write(`POST /late HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n${'a'.repeat(10)}`)
  await new Promise(resolve => setTimeout(resolve, 6000))
  release()
  paused.write('a'.repeat(990))
  t.match(await reading, /^HTTP\/1\.1 200 [^]*\{"size":1000\}/, 'a body held paused for its token check longer than the window is served')
})
