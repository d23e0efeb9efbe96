import t from 'tap'
import '../../helpers/no-keepalive.js'
import { startTestGateway } from '../../helpers/gateway.js'
import { scriptedLlm, toolCall } from '../../helpers/llm.js'

async function setup (t: any, env: Record<string, string> = {}) {
  const gw = await startTestGateway(t, env)
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${gw.harnessUrl}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    return { status: res.status, body: await res.json() as any }
  }
  return { ...gw, call }
}

t.test('agentic mode: a tool loop against an OpenAI-compatible endpoint', async t => {
  const llm = await scriptedLlm(t, (n, body) => n === 1
    ? { message: toolCall('call-1', 'word_count', { text: 'one two three' }) }
    : { message: { role: 'assistant', content: `there are ${JSON.parse(body.messages.at(-1).content)} words` } })
  const { call } = await setup(t, { HARNESS_LLM_URL: llm.url, HARNESS_LLM_MODEL: 'scripted', HARNESS_LLM_API_KEY: 'k-123' })
  const res = await call('POST', '/runs', { message: 'count the words in "one two three"' })
  t.equal(res.status, 200)
  t.match(res.body, { mode: 'agentic', status: 'succeeded', result: { output: 'there are 3 words' }, answer: 'there are 3 words' })
  t.notOk(res.body.events.some((e: any) => e.type === 'usage.recorded'), 'no usage.recorded when the endpoint reports no usage')
  const requests = llm.requests
  t.equal(requests.length, 2)
  t.equal(requests[0]!.path, '/v1/chat/completions')
  t.equal(requests[0]!.auth, 'Bearer k-123')
  t.equal(requests[0]!.body.model, 'scripted')
  t.same(requests[0]!.body.tools.map((x: any) => x.function.name).sort(), ['current_time', 'word_count'])
  t.match(requests[1]!.body.messages.at(-1), { role: 'tool', tool_call_id: 'call-1', content: '3' })
})

t.test('agentic mode: a tool that fails is tool.failed and the model is told; a model error ends the run with agent.completed (failure) then run.failed', async t => {
  const llm = await scriptedLlm(t, n => n === 1
    ? { message: toolCall('call-9', 'rm_rf', '{}') }
    : n === 2 ? { message: toolCall('call-10', 'word_count', 'not json') } : { status: 500, body: 'model down' })
  const { call } = await setup(t, { HARNESS_LLM_URL: llm.url })
  const res = await call('POST', '/runs', { message: 'x' })
  t.match(res.body, { status: 'failed', error: { code: 'model_error' }, answer: null })
  const events = res.body.events as any[]
  t.same(events.map(e => e.type), [
    'run.queued', 'run.started',
    'agent.started', 'agent.completed', 'tool.started', 'tool.failed',
    'agent.started', 'agent.completed', 'tool.started', 'tool.failed',
    'agent.started', 'agent.completed', 'run.failed'
  ])
  t.same(events[5].data, { tool: 'rm_rf', tool_call_id: 'call-9', error: 'unknown tool rm_rf', error_type: 'KeyError', reason: 'unknown tool rm_rf' })
  t.match(events[9].data, { tool: 'word_count', tool_call_id: 'call-10', error_type: 'SyntaxError' })
  t.match(events[11].data, { turn: 3, exit_reason: 'failure', error: /answered 500: model down/ })
  t.match(events[12], { message: /^Run failed: chat completions answered 500/, data: { status: 'failed', reason: 'error', error: 'model_error' } })
  t.same(JSON.parse(llm.requests[1]!.body.messages.at(-1).content), { error: 'unknown tool rm_rf' }, 'the model saw the failure')
})

t.test('agentic without HARNESS_LLM_URL fails with model_not_configured', async t => {
  const { call } = await setup(t)
  const res = await call('POST', '/runs', { message: 'hi' })
  t.match(res.body, { mode: 'agentic', status: 'failed', error: { code: 'model_not_configured' } })
})
