import t from 'tap'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { startIdp, harnessAuthEnv } from '../helpers/jwks.js'
import { eventually, rawConnect } from '../helpers/http.js'
import { readSse } from '../helpers/sse.js'
import { tailBus } from '../helpers/child.js'

async function setup (t: any, env: Record<string, string> = {}) {
  const gw = await startTestGateway(t, env)
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.harnessUrl}${path}`, { method, headers: body === undefined && method !== 'POST' ? headers : { 'content-type': 'application/json', ...headers }, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) })
    return { status: res.status, body: await res.json() as any }
  }
  return { ...gw, call }
}

t.test('POST /runs answers the terminal record; /runs:start answers 202 with links', async t => {
  const { call } = await setup(t)
  const sync = await call('POST', '/runs', { message: 'hello', mode: 'echo', options: { steps: 2 } })
  t.equal(sync.status, 200)
  t.match(sync.body, { tenant_id: 'default', mode: 'echo', message: 'hello', status: 'succeeded', result: { output: 'hello' }, answer: 'hello', artifacts: [], conversation_id: null, error: null, last_event_id: 5 })
  t.match(sync.body.run_id, /^run-/)
  t.same(sync.body.events.map((e: any) => e.type), ['run.queued', 'run.started', 'echo.step', 'echo.step', 'run.completed'], 'with its events')
  t.ok(sync.body.started_at && sync.body.ended_at && sync.body.created_at)

  const started = await call('POST', '/runs:start', { message: 'x', mode: 'echo' })
  t.equal(started.status, 202)
  const id = started.body.run_id
  t.same(started.body, { run_id: id, status: 'queued', links: { self: `/runs/${id}`, stream: `/runs/${id}/stream`, cancel: `/runs/${id}/cancel` } })
  const done = await eventually(() => call('GET', `/runs/${id}`), r => r.body.status === 'succeeded')
  t.equal(done.body.status, 'succeeded')
  t.same(await call('GET', '/runs/run-unknown'), { status: 404, body: { detail: 'run_not_found' } })
})

t.test('runs in flight are bounded per tenant and per process: 503 runs_in_flight_limit, nothing stored, a place freed by an end', async t => {
  const { call, harnessUrl } = await setup(t, { HARNESS_MAX_RUNS_IN_FLIGHT: '3', HARNESS_MAX_RUNS_IN_FLIGHT_PER_TENANT: '2' })
  const long = { message: 'm', mode: 'echo', options: { steps: 1000, delay_ms: 60_000 } }
  const as = (tenant: string) => ({ 'x-svc-tenant-client-id': tenant })
  const a1 = await call('POST', '/runs:start', long, as('ta'))
  const a2 = await call('POST', '/runs:start', long, as('ta'))
  t.same([a1.status, a2.status], [202, 202])
  const refused = await fetch(`${harnessUrl}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json', ...as('ta') }, body: JSON.stringify(long) })
  t.same([refused.status, await refused.json(), refused.headers.get('retry-after')], [503, { detail: 'runs_in_flight_limit' }, '1'], 'a third for one tenant')
  t.equal((await call('POST', '/runs:start', long, as('tb'))).status, 202, 'another tenant still gets its own')
  t.same(await call('POST', '/runs', { message: 'm', mode: 'echo' }, as('tc')), { status: 503, body: { detail: 'runs_in_flight_limit' } }, 'past the process\'s bound, any tenant, POST /runs too')
  const listed = await call('GET', '/runs', undefined, as('ta'))
  t.equal(listed.body.runs.length, 2, 'the refused runs were never stored')
  t.equal((await call('POST', `/runs/${a1.body.run_id}/cancel`, undefined, as('ta'))).status, 200)
  t.equal((await call('POST', '/runs:start', { message: 'm', mode: 'echo' }, as('ta'))).status, 202, 'an ended run frees its place')
})

t.test('a run id that could not be a run\'s is 404 on every /runs/{id} route, never 500', async t => {
  const { call, harnessUrl } = await setup(t)
  // lmdb-js could not encode an 8,000-character key and answered 500; the HTTP layer now refuses a
  // header block past 4 KiB first (431), so the longest id that reaches the harness is tried.
  for (const id of ['r'.repeat(3800), 'a'.repeat(129), 'run%00x', 'run%2Fx', '.hidden']) {
    t.same(await call('GET', `/runs/${id}`), { status: 404, body: { detail: 'run_not_found' } }, `GET ${id.slice(0, 12)}`)
    t.same(await call('POST', `/runs/${id}/cancel`), { status: 404, body: { detail: 'run_not_found' } }, `cancel ${id.slice(0, 12)}`)
    const stream = await fetch(`${harnessUrl}/runs/${id}/stream`)
    t.same([stream.status, await stream.json()], [404, { detail: 'run_not_found' }], `stream ${id.slice(0, 12)}`)
  }
})

t.test('the origin\'s mode `auto` runs as agentic; conversation_id is kept; other fields of its request are ignored', async t => {
  const { call } = await setup(t)
  const res = await call('POST', '/runs', { message: 'hi', mode: 'auto', conversation_id: 'c-7', thread_id: 't', user_id: 'u', skill_id: 's', debug: true })
  t.match(res.body, { mode: 'agentic', status: 'failed', error: { code: 'model_not_configured' }, conversation_id: 'c-7', answer: null })
  t.same(await call('GET', '/skills'), { status: 200, body: [] })
})

t.test('a slow sync run answers 202 with the record past HARNESS_SYNC_TIMEOUT_MS', async t => {
  const { call } = await setup(t, { HARNESS_SYNC_TIMEOUT_MS: '50' })
  const res = await call('POST', '/runs', { message: 'x', mode: 'echo', options: { steps: 3, delay_ms: 100 } })
  t.equal(res.status, 202)
  t.equal(res.body.status, 'running')
})

t.test('bad bodies are 400 with a detail', async t => {
  const { call } = await setup(t)
  const cases: Array<[unknown, string]> = [
    [{ mode: 'echo' }, 'message is required'],
    [{ message: 42 }, 'message must be a string'],
    [{ message: 'x'.repeat(64 * 1024 + 1) }, 'message must not exceed 65536 bytes'],
    [{ message: 'x', mode: 'telepathy' }, 'unknown mode "telepathy"'],
    [{ message: 'x', mode: 'canned' }, 'unknown mode "canned"'],
    [{ message: 'x', conversation_id: 7 }, 'conversation_id must be a string or null'],
    [{ message: 'x', conversation_id: 'a\nb' }, 'conversation_id must not contain control characters'],
    [[1], 'body must be a JSON object'],
    ['{oops', 'request body is not valid JSON']
  ]
  for (const [body, detail] of cases) t.same(await call('POST', '/runs:start', body), { status: 400, body: { detail } }, detail)
  t.equal((await call('POST', '/runs:start', { message: 'x'.repeat(64 * 1024), mode: 'echo' })).status, 202, '64 KiB exactly is fine')
})

t.test('tenant isolation: the header tenant wins over the body; other tenants get 403 on GET and stream, in flight and terminal', async t => {
  const idp = await startIdp(t)
  const { call, harnessUrl } = await setup(t, harnessAuthEnv(idp))
  await eventually(() => fetch(`${harnessUrl}/health/ready`).then(r => r.status), s => s === 200)
  const auth = { authorization: `Bearer ${await idp.sign()}` }
  const acme = { ...auth, 'x-svc-tenant-client-id': 'acme' }
  const globex = { ...auth, 'x-svc-tenant-client-id': 'globex' }
  const slow = await call('POST', '/runs:start', { message: 'x', mode: 'echo', tenant_id: 'globex', options: { steps: 50, delay_ms: 100 } }, acme)
  const id = slow.body.run_id
  t.equal((await call('GET', `/runs/${id}`, undefined, acme)).body.tenant_id, 'acme', 'the body tenant_id is overridden by the header')
  const forbidden = { status: 403, body: { detail: 'cross_tenant_replay:run' } }
  t.same(await call('GET', `/runs/${id}`, undefined, globex), forbidden, 'GET, in flight')
  const streamInFlight = await fetch(`${harnessUrl}/runs/${id}/stream`, { headers: globex })
  t.same([streamInFlight.status, await streamInFlight.json()], [403, forbidden.body], 'stream, in flight')
  t.same(await call('POST', `/runs/${id}/cancel`, undefined, globex), forbidden, 'cancel from another tenant')
  t.equal((await call('POST', `/runs/${id}/cancel`, undefined, acme)).body.status, 'cancelled')
  t.same(await call('GET', `/runs/${id}`, undefined, globex), forbidden, 'GET, terminal')
  const streamTerminal = await fetch(`${harnessUrl}/runs/${id}/stream`, { headers: globex })
  t.equal(streamTerminal.status, 403, 'stream, terminal')
  await streamTerminal.arrayBuffer()
})

t.test('cancel: queued or running → cancelled; a terminal run is 409', async t => {
  const { call, harnessUrl } = await setup(t)
  const { body } = await call('POST', '/runs:start', { message: 'x', mode: 'echo', options: { steps: 100, delay_ms: 50 } })
  const stream = fetch(`${harnessUrl}/runs/${body.run_id}/stream`).then(r => readSse(r))
  await eventually(() => call('GET', `/runs/${body.run_id}`), r => r.body.status === 'running')
  const cancelled = await call('POST', `/runs/${body.run_id}/cancel`)
  t.equal(cancelled.status, 200)
  t.match(cancelled.body, { status: 'cancelled', result: null })
  const events = await stream
  t.equal(events.at(-1)!.event, 'run.failed', 'the stream ends with the terminal event')
  t.match(JSON.parse(events.at(-1)!.data!), { type: 'run.failed', message: 'Run cancelled', data: { status: 'cancelled', reason: 'cancelled', error: 'cancelled' } })
  t.same(await call('POST', `/runs/${body.run_id}/cancel`), { status: 409, body: { detail: 'run_not_in_flight:cancelled' } })
  const after = await call('GET', `/runs/${body.run_id}`)
  t.equal(after.body.status, 'cancelled', 'a late step or result does not undo the cancel')
})

t.test('SSE: ids, event types, the event object as data; Last-Event-ID resumes; many subscribers get everything', async t => {
  const { call, harnessUrl } = await setup(t)
  const { body } = await call('POST', '/runs:start', { message: 'go', mode: 'echo', options: { steps: 4, delay_ms: 30 } })
  const url = `${harnessUrl}/runs/${body.run_id}/stream`
  const res = await fetch(url)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  const others = await Promise.all(Array.from({ length: 20 }, () => fetch(url)))
  const subscribers = await Promise.all([res, ...others].map(r => readSse(r)))
  for (const events of subscribers) {
    t.same(events.map(e => e.event), ['run.queued', 'run.started', 'echo.step', 'echo.step', 'echo.step', 'echo.step', 'run.completed'])
    t.same(events.map(e => e.id), ['1', '2', '3', '4', '5', '6', '7'])
    t.same(events.map(e => JSON.parse(e.data!).id), events.map(e => e.id), 'the SSE id is the event\'s id')
    t.same(events.map(e => JSON.parse(e.data!).type), events.map(e => e.event), 'and the event line its type')
  }
  const step = JSON.parse(subscribers[0]![2]!.data!)
  t.same(step, { id: '3', type: 'echo.step', seq: 3, run_id: body.run_id, tenant_id: 'default', message: 'Echo step 1', data: { step: 1, text: 'go' }, created_at: step.created_at })
  t.match(JSON.parse(subscribers[0]![6]!.data!).data, { status: 'succeeded', run: { status: 'succeeded', answer: 'go', last_event_id: 7 } })

  const resumed = await readSse(await fetch(url, { headers: { 'last-event-id': '4' } }))
  t.same(resumed.map(e => e.id), ['5', '6', '7'], 'a terminal run replays after Last-Event-ID and closes')
})

t.test('a subscriber that never reads does not delay others, and ends cut off with an error frame or with the whole run', async t => {
  const { call, harnessUrl } = await setup(t, { HARNESS_SSE_BUFFER: '1024' })
  // Echo steps carry at most 256 characters, so a run of 1000 steps may fit in loopback's socket buffers:
  // when it does the slow one gets it all; test/runs/stream.test.ts pins the cut-off itself.
  const { body } = await call('POST', '/runs:start', { message: 'x'.repeat(60 * 1024), mode: 'echo', options: { steps: 1000 } })
  const path = `/runs/${body.run_id}/stream`
  const slow = await rawConnect(Number(new URL(harnessUrl).port))
  slow.pause()
  slow.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
  const fast = await readSse(await fetch(`${harnessUrl}${path}`))
  t.equal(fast.filter(e => e.event === 'echo.step').length, 1000, 'the fast subscriber got every step')
  t.equal(fast.at(-1)!.event, 'run.completed')
  let text = ''
  slow.on('data', d => { text += d.toString() })
  slow.resume()
  await new Promise(resolve => slow.once('close', resolve))
  const tail = text.slice(-300)
  const overflow = new RegExp(`event: error\\ndata: \\{"error":"stream_overflow","run_id":"${body.run_id}","last_event_id":\\d+\\}`)
  const cut = overflow.test(tail)
  t.ok(cut !== text.includes('event: run.completed'), `the slow one ended ${cut ? 'cut off' : 'with the whole run'}, never both (…${tail.slice(-120)})`)
})

t.test('every event is published to TOPIC_RUNS as the object the stream carries, keyed by run_id, in order', async t => {
  const { call, dataDir, harnessUrl } = await setup(t, { TOPIC_RUNS: 'runs.test.v1' })
  const { body } = await call('POST', '/runs', { message: 'pub', mode: 'echo', options: { steps: 2 } }, { 'x-svc-tenant-client-id': 'acme' })
  const messages = await eventually(() => tailBus(dataDir, 'runs.test.v1'), m => m.length >= 5)
  t.same(messages.map(m => m.key), Array(5).fill(body.run_id))
  t.same(messages.map(m => m.value.type), ['run.queued', 'run.started', 'echo.step', 'echo.step', 'run.completed'])
  t.same(messages.map(m => m.value.id), ['1', '2', '3', '4', '5'])
  t.same(messages.map(m => m.headers), Array(5).fill({ 'client-id': 'acme', schema: 'run-event@2', owner: messages[0]!.headers['owner'] }))
  t.match(messages[0]!.headers['owner'], /^\d+-[0-9a-f]{8}$/, 'the owner header names the incarnation that ran it')
  t.same(messages.map(m => m.value.tenant_id), Array(5).fill('acme'), 'each message names its tenant')
  const streamed = await readSse(await fetch(`${harnessUrl}/runs/${body.run_id}/stream`, { headers: { 'x-svc-tenant-client-id': 'acme' } }))
  t.same(messages.map(m => m.value), streamed.map(e => JSON.parse(e.data!)), 'the same objects as the stream')
  const ready = await fetch(`${harnessUrl}/health/ready`)
  t.match(await ready.json(), { status: 'ready', components: { bus: { ready: true, run_events_waiting: 0 } } }, 'the bus is a component of readiness')
})

t.test('GET /runs/{id}?events_after=<seq> goes on from there; a bad or repeated value is 400', async t => {
  const { call, harnessUrl } = await setup(t)
  const { body } = await call('POST', '/runs', { message: 'm', mode: 'echo', options: { steps: 3 } })
  const url = `${harnessUrl}/runs/${body.run_id}`
  const rest = await (await fetch(`${url}?events_after=3`)).json() as { events: Array<{ seq: number }> }
  t.same(rest.events.map(e => e.seq), [4, 5, 6])
  for (const query of ['events_after=-1', 'events_after=x', 'events_after=1&events_after=2']) {
    const res = await fetch(`${url}?${query}`)
    t.equal(res.status, 400, query)
    t.match(await res.json(), { detail: /events_after/ })
  }
})
