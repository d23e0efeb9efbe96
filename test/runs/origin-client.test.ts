import t, { type Test } from 'tap'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { scriptedLlm, toolCall } from '../helpers/llm.js'
import { createHarnessClient, HarnessApiError, type HarnessEvent } from './client/harness-client.js'

/** Every event as the origin's client types it: `id` a string (the SSE id), `seq` a number, `data` an object. */
function checkShape (t: Test, e: HarnessEvent, runId: string): void {
  t.same(Object.keys(e).sort(), ['created_at', 'data', 'id', 'message', 'run_id', 'seq', 'tenant_id', 'type'], `${e.type}: the fields of the envelope`)
  t.ok(typeof e.id === 'string' && e.id === String(e.seq) && Number.isInteger(e.seq), `${e.type}: id is the string of seq`)
  t.equal(e.run_id, runId)
  t.equal(typeof e.message, 'string')
  t.ok(e.data !== null && typeof e.data === 'object' && !Array.isArray(e.data), `${e.type}: data is an object`)
  t.ok(!Number.isNaN(Date.parse(e.created_at)), `${e.type}: created_at is a date`)
}

async function collect (stream: AsyncIterable<HarnessEvent>): Promise<HarnessEvent[]> {
  const events: HarnessEvent[] = []
  for await (const e of stream) {
    events.push(e)
    if (e.type === 'run.completed' || e.type === 'run.failed') break
  }
  return events
}

t.test('the origin client\'s quickstart: create, stream to run.completed, resume from a yielded id, read the answer', async t => {
  const { harnessUrl } = await startTestGateway(t)
  const client = createHarnessClient({ baseUrl: `${harnessUrl}///` })
  const { run_id: runId } = await client.runs.create({ message: 'what is in stock?', tenant_id: 'mintral', mode: 'echo', options: { steps: 3, delay_ms: 10 }, conversation_id: 'conv-42' })
  const events = await collect(client.runs.stream(runId))
  t.same(events.map(e => e.type), ['run.queued', 'run.started', 'echo.step', 'echo.step', 'echo.step', 'run.completed'])
  t.same(events.map(e => e.seq), [1, 2, 3, 4, 5, 6], 'dense, in order')
  for (const e of events) checkShape(t, e, runId)
  t.match(events[2]!, { message: 'Echo step 1', data: { step: 1, text: 'what is in stock?' } }, 'the mode\'s fields live under data')
  t.match(events.at(-1)!.data, { status: 'succeeded', run: { status: 'succeeded', answer: 'what is in stock?' } })

  const resumed = await collect(client.runs.stream(runId, { lastEventId: events[2]!.id }))
  t.same(resumed, events.slice(3), 'resumed after a yielded id: the rest, the same events')
  t.same(await collect(client.runs.stream(runId, { lastEventId: events.at(-1)!.id })), [], 'resumed after the end: the stream ends at once, empty')

  const record = await client.runs.get(runId)
  t.match(record, { run_id: runId, status: 'succeeded', answer: 'what is in stock?', artifacts: [], conversation_id: 'conv-42', tenant_id: 'default', mode: 'echo' })
  t.same(record.events, events, 'the record carries the events the stream yielded')
  t.same(await client.skills.list(), [], 'skills.list: the empty list')
})

t.test('the quickstart with the agentic mode (as `auto`) against a scripted OpenAI-compatible server', async t => {
  const llm = await scriptedLlm(t, n => n === 1
    ? { message: toolCall('call-1', 'word_count', { text: 'one two three' }), usage: { prompt_tokens: 40, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 32 } } }
    : { message: { role: 'assistant', content: 'There are 3 words.' }, usage: { prompt_tokens: 60, completion_tokens: 6 } })
  const { harnessUrl } = await startTestGateway(t, { HARNESS_LLM_URL: llm.url, HARNESS_LLM_MODEL: 'scripted-1' })
  const client = createHarnessClient({ baseUrl: harnessUrl })
  const { run_id: runId } = await client.runs.create({ message: 'count the words in "one two three"', mode: 'auto', conversation_id: null })
  const events = await collect(client.runs.stream(runId))
  t.same(events.map(e => e.type), [
    'run.queued', 'run.started',
    'agent.started', 'usage.recorded', 'agent.completed', 'tool.started', 'tool.completed',
    'agent.started', 'usage.recorded', 'agent.completed', 'answer.completed',
    'run.completed'
  ])
  for (const e of events) checkShape(t, e, runId)
  const [, , started, usage, completed, toolStarted, toolCompleted, , , lastCompleted, answer] = events
  t.match(started!.data, { agent: 'agentic', graph: 'agentic', turn: 1 })
  t.same(usage!.data, { agent: 'agentic', model: 'scripted-1', input_tokens: 40, output_tokens: 9, cache_read_input_tokens: 32, cache_creation_input_tokens: 0 })
  t.match(completed!.data, { agent: 'agentic', graph: 'agentic', turn: 1, exit_reason: 'next_action', tool_calls: 1 })
  t.ok(Number.isInteger(completed!.data['duration_ms']))
  t.same(toolStarted!.data, { tool: 'word_count', tool_call_id: 'call-1', input_keys: ['text'] })
  t.same(toolCompleted!.data, { tool: 'word_count', tool_call_id: 'call-1', result_shape: { type: 'number', length: 1 }, output: 3 })
  t.match(lastCompleted!.data, { turn: 2, exit_reason: 'ok', tool_calls: 0 })
  t.same(answer!.data, { text: 'There are 3 words.', length: 18 })

  const resumed = await collect(client.runs.stream(runId, { lastEventId: events[5]!.id }))
  t.same(resumed.map(e => e.type), events.slice(6).map(e => e.type), 'resumed after a tool.started')
  const record = await client.runs.get(runId)
  t.match(record, { mode: 'agentic', status: 'succeeded', answer: 'There are 3 words.', conversation_id: null, artifacts: [] })
  t.equal(llm.requests.length, 2)
})

t.test('what the client sees of failures: an unknown run is http_404; a cancel ends the stream with run.failed, reason cancelled', async t => {
  const { harnessUrl } = await startTestGateway(t)
  const client = createHarnessClient({ baseUrl: harnessUrl })
  const unknown = await collect(client.runs.stream('run-00000000-0000-7000-8000-000000000000')).catch(err => err)
  t.ok(unknown instanceof HarnessApiError)
  t.match(unknown, { code: 'http_404', status: 404, runId: 'run-00000000-0000-7000-8000-000000000000', message: 'run_not_found' })

  const { run_id: runId } = await client.runs.create({ message: 'slow', mode: 'echo', options: { steps: 100, delay_ms: 50 } })
  const seen: HarnessEvent[] = []
  const streamed = (async () => {
    for await (const e of client.runs.stream(runId)) {
      seen.push(e)
      if (e.type === 'echo.step') await fetch(`${harnessUrl}/runs/${runId}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
      if (e.type === 'run.completed' || e.type === 'run.failed') break
    }
  })()
  await streamed
  const last = seen.at(-1)!
  t.match(last, { type: 'run.failed', message: 'Run cancelled', data: { status: 'cancelled', reason: 'cancelled', error: 'cancelled' } })
  t.match(await client.runs.get(runId), { status: 'cancelled', answer: null })
})
