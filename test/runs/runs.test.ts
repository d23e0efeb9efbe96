import t from 'tap'
import { createServer } from 'node:http'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { startIdp, harnessAuthEnv } from '../helpers/jwks.js'
import { eventually, rawConnect } from '../helpers/http.js'
import { readSse } from '../helpers/sse.js'
import { tailBus } from '../helpers/child.js'

async function setup (t: any, env: Record<string, string> = {}) {
  const gw = await startTestGateway(t, env)
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${gw.harnessUrl}${path}`, { method, headers, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) })
    return { status: res.status, body: await res.json() as any }
  }
  return { ...gw, call }
}

t.test('POST /runs answers the terminal record; /runs:start answers 202 with links', async t => {
  const { call } = await setup(t)
  const sync = await call('POST', '/runs', { message: 'hello', mode: 'echo', options: { steps: 2 } })
  t.equal(sync.status, 200)
  t.match(sync.body, { tenant_id: 'default', mode: 'echo', message: 'hello', status: 'succeeded', result: { output: 'hello' }, error: null, last_event_id: 5 })
  t.match(sync.body.run_id, /^run-/)
  t.ok(sync.body.started_at && sync.body.ended_at && sync.body.created_at)

  const started = await call('POST', '/runs:start', { message: 'x', mode: 'echo' })
  t.equal(started.status, 202)
  const id = started.body.run_id
  t.same(started.body, { run_id: id, status: 'queued', links: { self: `/runs/${id}`, stream: `/runs/${id}/stream`, cancel: `/runs/${id}/cancel` } })
  const done = await eventually(() => call('GET', `/runs/${id}`), r => r.body.status === 'succeeded')
  t.equal(done.body.status, 'succeeded')
  t.same(await call('GET', '/runs/run-unknown'), { status: 404, body: { detail: 'run_not_found' } })
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
  t.equal(events.at(-1)!.event, 'run.cancelled', 'the stream ends with the terminal event')
  t.same(await call('POST', `/runs/${body.run_id}/cancel`), { status: 409, body: { detail: 'run_not_in_flight:cancelled' } })
  const after = await call('GET', `/runs/${body.run_id}`)
  t.equal(after.body.status, 'cancelled', 'a late step or result does not undo the cancel')
})

t.test('SSE: ids, event names, JSON data; Last-Event-ID resumes; many subscribers get everything', async t => {
  const { call, harnessUrl } = await setup(t)
  const { body } = await call('POST', '/runs:start', { message: 'go', mode: 'echo', options: { steps: 4, delay_ms: 30 } })
  const url = `${harnessUrl}/runs/${body.run_id}/stream`
  const res = await fetch(url)
  t.equal(res.headers.get('content-type'), 'text/event-stream')
  const others = await Promise.all(Array.from({ length: 20 }, () => fetch(url)))
  const subscribers = await Promise.all([res, ...others].map(r => readSse(r)))
  for (const events of subscribers) {
    t.same(events.map(e => e.event), ['run.queued', 'run.running', 'step', 'step', 'step', 'step', 'run.succeeded'])
    t.same(events.map(e => Number(e.id)), [1, 2, 3, 4, 5, 6, 7])
  }
  t.same(JSON.parse(subscribers[0]![2]!.data!), { type: 'echo', step: 1, text: 'go' })
  t.equal(JSON.parse(subscribers[0]![6]!.data!).status, 'succeeded')

  const resumed = await readSse(await fetch(url, { headers: { 'last-event-id': '4' } }))
  t.same(resumed.map(e => Number(e.id)), [5, 6, 7], 'a terminal run replays after Last-Event-ID and closes')
})

t.test('a slow subscriber is cut off with stream.overflow and does not delay others', async t => {
  const { call, harnessUrl } = await setup(t, { HARNESS_SSE_BUFFER: '1024' })
  // More than loopback socket buffers hold (several MB), so the server itself must queue.
  const big = 'x'.repeat(60 * 1024)
  const { body } = await call('POST', '/runs:start', { message: big, mode: 'echo', options: { steps: 250 } })
  const path = `/runs/${body.run_id}/stream`
  const slow = await rawConnect(Number(new URL(harnessUrl).port))
  slow.pause()
  slow.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)
  const fast = await readSse(await fetch(`${harnessUrl}${path}`))
  t.equal(fast.filter(e => e.event === 'step').length, 250, 'the fast subscriber got every step')
  t.equal(fast.at(-1)!.event, 'run.succeeded')
  let text = ''
  slow.on('data', d => { text += d.toString() })
  slow.resume()
  await new Promise(resolve => slow.once('close', resolve))
  const tail = text.slice(-300)
  t.ok(/event: stream\.overflow\ndata: \{"reason":"subscriber too slow","last_event_id":\d+\}/.test(tail), `the slow one got a final overflow event and was closed (…${tail.slice(-120)})`)
  t.notOk(text.includes('event: run.succeeded'), 'and never the rest')
})

t.test('agentic mode: a tool loop against an OpenAI-compatible endpoint', async t => {
  const requests: any[] = []
  const llm = createServer((req, res) => {
    let body = ''
    req.on('data', c => { body += c })
    req.on('end', () => {
      const parsed = JSON.parse(body)
      requests.push({ url: req.url, auth: req.headers.authorization, body: parsed })
      const message = requests.length === 1
        ? { role: 'assistant', content: null, tool_calls: [{ id: 'call-1', type: 'function', function: { name: 'word_count', arguments: '{"text":"one two three"}' } }] }
        : { role: 'assistant', content: `there are ${JSON.parse(parsed.messages.at(-1).content)} words` }
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ choices: [{ index: 0, message, finish_reason: 'stop' }] }))
    })
  })
  await new Promise<void>(resolve => llm.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => llm.close(resolve)))
  const { call } = await setup(t, { HARNESS_LLM_URL: `http://127.0.0.1:${(llm.address() as any).port}/v1`, HARNESS_LLM_MODEL: 'scripted', HARNESS_LLM_API_KEY: 'k-123' })
  const res = await call('POST', '/runs', { message: 'count the words in "one two three"' })
  t.equal(res.status, 200)
  t.match(res.body, { mode: 'agentic', status: 'succeeded', result: { output: 'there are 3 words' } })
  t.equal(requests.length, 2)
  t.equal(requests[0].url, '/v1/chat/completions')
  t.equal(requests[0].auth, 'Bearer k-123')
  t.equal(requests[0].body.model, 'scripted')
  t.same(requests[0].body.tools.map((x: any) => x.function.name).sort(), ['current_time', 'word_count'])
  t.match(requests[1].body.messages.at(-1), { role: 'tool', tool_call_id: 'call-1', content: '3' })
})

t.test('agentic without HARNESS_LLM_URL fails with model_not_configured', async t => {
  const { call } = await setup(t)
  const res = await call('POST', '/runs', { message: 'hi' })
  t.match(res.body, { mode: 'agentic', status: 'failed', error: { code: 'model_not_configured' } })
})

t.test('every transition and step is published to TOPIC_RUNS, keyed by run_id, in order', async t => {
  const { call, dataDir } = await setup(t, { TOPIC_RUNS: 'runs.test.v1' })
  const { body } = await call('POST', '/runs', { message: 'pub', mode: 'echo', options: { steps: 2 } }, { 'x-svc-tenant-client-id': 'acme' })
  const messages = await eventually(() => tailBus(dataDir, 'runs.test.v1'), m => m.length >= 5)
  t.same(messages.map(m => m.key), Array(5).fill(body.run_id))
  t.same(messages.map(m => m.value.event), ['run.queued', 'run.running', 'step', 'step', 'run.succeeded'])
  t.same(messages.map(m => m.value.id), [1, 2, 3, 4, 5])
  t.same(messages[0]!.headers, { 'client-id': 'acme', schema: 'run-event@1' })
  t.equal(messages[4]!.value.tenant_id, 'acme')
})
