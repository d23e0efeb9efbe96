import t from 'tap'
import pino from 'pino'
import '../helpers/no-keepalive.js'
import { LocalBus } from '../../src/bus/index.js'
import { loadConfig } from '../../src/config/index.js'
import type { RequestContext, Route } from '../../src/http/index.js'
import { openState } from '../../src/state/index.js'
import { HarnessService } from '../../src/runs/index.js'
import { startTestGateway } from '../helpers/gateway.js'
import { eventually, rawConnect } from '../helpers/http.js'
import { readSse, type SseEvent } from '../helpers/sse.js'

/** Reads a stream to its end, or fails the test once `ms` pass: a stream that should have ended but stays open. */
async function readToEnd (t: Tap, url: string, headers: Record<string, string> = {}, ms = 10_000): Promise<{ status: number, events: SseEvent[] }> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(ms) })
  if (res.status !== 200) return { status: res.status, events: [] }
  try {
    return { status: 200, events: await readSse(res) }
  } catch (err) {
    t.fail(`the stream was still open after ${ms} ms (${(err as Error).name})`)
    return { status: 200, events: [] }
  }
}
type Tap = { fail: (message: string) => void }

async function finishedRun (harnessUrl: string, steps: number): Promise<any> {
  return (await fetch(`${harnessUrl}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'm', mode: 'echo', options: { steps } }) })).json()
}

t.test('a finished run\'s stream with Last-Event-ID at or past its end ends at once, empty', async t => {
  const { harnessUrl } = await startTestGateway(t)
  const run = await finishedRun(harnessUrl, 2)
  t.equal(run.last_event_id, 5)
  for (const id of ['5', '6', '9007199254740991', '99999999999999999999999', ' 5 ']) {
    const { status, events } = await readToEnd(t, `${harnessUrl}/runs/${run.run_id}/stream`, { 'last-event-id': id })
    t.same([status, events], [200, []], `Last-Event-ID ${JSON.stringify(id)}`)
  }
  const { events } = await readToEnd(t, `${harnessUrl}/runs/${run.run_id}/stream`, { 'last-event-id': '4' })
  t.same(events.map(e => e.id), ['5'], 'one short of the end: the last event, then the end')
})

t.test('Last-Event-ID must be a non-negative integer: anything else is 400, never a guess that skips or repeats events', async t => {
  const { harnessUrl } = await startTestGateway(t)
  const run = await finishedRun(harnessUrl, 2)
  for (const id of ['1.5', '1e309', 'Infinity', '-1', 'abc', '0x2', '1,2', 'evt_42', '+3']) {
    const res = await fetch(`${harnessUrl}/runs/${run.run_id}/stream`, { headers: { 'last-event-id': id } })
    t.same([res.status, await res.json()], [400, { detail: 'Last-Event-ID must be a non-negative integer' }], `Last-Event-ID ${JSON.stringify(id)}`)
  }
  const { events } = await readToEnd(t, `${harnessUrl}/runs/${run.run_id}/stream`, { 'last-event-id': '' })
  t.same(events.map(e => e.id), ['1', '2', '3', '4', '5'], 'an empty one means none: the whole run')
})

t.test('a run in flight with Last-Event-ID past what it has so far: only later events, then its end', async t => {
  const { harnessUrl } = await startTestGateway(t)
  const { run_id: id } = await (await fetch(`${harnessUrl}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'm', mode: 'echo', options: { steps: 12, delay_ms: 30 } }) })).json() as any
  const { events } = await readToEnd(t, `${harnessUrl}/runs/${id}/stream`, { 'last-event-id': '10' })
  t.same(events.map(e => e.id), ['11', '12', '13', '14', '15'])
  t.equal(events.at(-1)!.event, 'run.completed')
})

/** A RequestContext that records what the handler writes, for driving the harness's routes in-process. */
function fakeContext (params: Record<string, string>, headers: Record<string, string> = {}, body?: unknown, takes = true) {
  const written: string[] = []
  let ended = false
  const ctx = {
    headers,
    params,
    live: true,
    checkedJson: () => body,
    writeHead: () => {},
    // A socket that `takes` nothing queues each write and never becomes writable again.
    write: (chunk: string) => { written.push(chunk); return takes },
    onWritable: () => {},
    onAbort: () => {},
    end: () => { ended = true }
  }
  return { ctx: ctx as unknown as RequestContext, text: () => written.join(''), ended: () => ended }
}

async function harness (t: { testdir: () => string, teardown: (fn: () => unknown) => void }, env: Record<string, string> = {}) {
  const dir = t.testdir()
  const config = loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', ...env })
  const state = openState(dir)
  const service = new HarnessService(config, state, new LocalBus(state), pino({ level: 'silent' }), { id: 'self', isAlive: () => true, knows: id => id === 'self' })
  await service.start()
  t.teardown(async () => { await service.stop(); await state.close() })
  const routes = new Map(service.routes().map(r => [`${r.method} ${r.path}`, r] as [string, Route]))
  const call = async (name: string, fake: ReturnType<typeof fakeContext>): Promise<any> => {
    const route = routes.get(name)!
    return route.handler(fake.ctx, route.authorize ? await route.authorize(fake.ctx) : undefined)
  }
  return { call }
}

const JSON_BODY = { 'content-type': 'application/json' }

const ids = (text: string): number[] => [...text.matchAll(/^id: (\d+)$/gm)].map(m => Number(m[1]))

t.test('replay yields to the event loop between slices: a long run is not written in one go', async t => {
  const { call } = await harness(t)
  const { body: { run_id: id } } = await call('POST /runs:start', fakeContext({}, JSON_BODY, { message: 'long', mode: 'echo', options: { steps: 1000 } }))
  const live = fakeContext({ id })
  await call('GET /runs/{id}/stream', live)
  await eventually(async () => live.ended(), ended => ended, 30_000, 5)
  const fake = fakeContext({ id })
  await call('GET /runs/{id}/stream', fake)
  const afterHandler = ids(fake.text()).length
  const atNextTurn = await new Promise<number>(resolve => setImmediate(() => resolve(ids(fake.text()).length)))
  t.ok(afterHandler > 0 && afterHandler < 1003, `the handler wrote one slice before returning (${afterHandler} of 1003 events)`)
  t.ok(atNextTurn < 1003, `a callback of the next turn ran before the replay was done (${atNextTurn} of 1003 written by then)`)
  await eventually(async () => fake.ended(), ended => ended, 10_000, 5)
  t.same(ids(fake.text()), Array.from({ length: 1003 }, (_, i) => i + 1), 'then every event, in order, once')
})

t.test('events stored while a replay is under way are neither lost nor repeated', async t => {
  const { call } = await harness(t)
  const started = await call('POST /runs:start', fakeContext({}, JSON_BODY, { message: 'm', mode: 'echo', options: { steps: 1000, delay_ms: 1 } }))
  const id = started.body.run_id
  const streams = []
  for (let i = 0; i < 6; i++) {
    const fake = fakeContext({ id })
    await call('GET /runs/{id}/stream', fake)
    streams.push(fake)
    // The next stream joins once the run has moved on, so each replay overlaps other events being stored.
    await eventually(async () => ids(fake.text()).length, n => n >= (i + 1) * 150, 30_000, 5)
  }
  for (const fake of streams) {
    await eventually(async () => fake.ended(), ended => ended, 60_000, 20)
    t.same(ids(fake.text()), Array.from({ length: 1003 }, (_, i) => i + 1))
  }
})

t.test('many subscribers that never read a long run: /health answers, readers get everything, the others are cut off or get it all', async t => {
  const { harnessUrl } = await startTestGateway(t, { HARNESS_HEARTBEAT_MS: '200' })
  const run = await (await fetch(`${harnessUrl}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'x'.repeat(16 * 1024), mode: 'echo', options: { steps: 1000 } }) })).json() as any
  const port = Number(new URL(harnessUrl).port)
  const idle = await Promise.all(Array.from({ length: 40 }, () => rawConnect(port)))
  for (const socket of idle) {
    socket.pause()
    socket.write(`GET /runs/${run.run_id}/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
  }
  const reader = fetch(`${harnessUrl}/runs/${run.run_id}/stream`).then(r => readSse(r))
  for (let i = 0; i < 5; i++) {
    const health = await fetch(`${harnessUrl}/health`, { signal: AbortSignal.timeout(5000) }).catch(err => err as Error)
    t.equal(health instanceof Response ? health.status : String(health), 200, `/health answered during the replay (${i + 1})`)
  }
  t.same((await reader).map(e => Number(e.id)), Array.from({ length: 1003 }, (_, i) => i + 1), 'a subscriber that reads gets every event')
  const tails = await Promise.all(idle.map(socket => new Promise<string>(resolve => {
    let text = ''
    socket.on('data', d => { text = (text + d.toString()).slice(-400) })
    socket.once('close', () => resolve(text))
    socket.resume()
  })))
  // Loopback buffers can take a good part of the run before the server sees any backpressure, so each
  // one either was cut off (the test below pins when) or, had its buffers held all, got the whole run.
  const cut = tails.filter(tail => tail.includes('"error":"stream_overflow"'))
  const whole = (tail: string): boolean => tail.includes('"last_event_id":1003}}') && tail.endsWith('\r\n0\r\n\r\n')
  t.same(tails.filter(tail => !cut.includes(tail) && !whole(tail)), [], 'each one that never read was cut off or got the whole run')
  t.comment(`${cut.length} of 40 were cut off; the others' loopback buffers held the whole run`)
})

t.test('a subscriber whose socket takes nothing stops its replay and is closed after two heartbeats', async t => {
  const { call } = await harness(t, { HARNESS_HEARTBEAT_MS: '100', HARNESS_SSE_BUFFER: '32768' })
  const { body: { run_id: id } } = await call('POST /runs:start', fakeContext({}, JSON_BODY, { message: 'x'.repeat(1024), mode: 'echo', options: { steps: 1000 } }))
  const live = fakeContext({ id })
  await call('GET /runs/{id}/stream', live)
  await eventually(async () => live.ended(), ended => ended, 30_000, 5)
  const stuck = fakeContext({ id }, {}, undefined, false)
  await call('GET /runs/{id}/stream', stuck)
  await eventually(async () => stuck.ended(), ended => ended, 10_000, 20)
  const sent = ids(stuck.text())
  t.ok(sent.length > 0 && sent.length < 100, `the replay stopped at the first write the socket did not take (${sent.length} events of 1003)`)
  t.match(stuck.text(), new RegExp(`event: error\\ndata: \\{"error":"stream_overflow","run_id":"${id}","last_event_id":${sent.at(-1)}\\}\\n\\n$`), 'then stream_overflow with the last id sent, and the end')
})
