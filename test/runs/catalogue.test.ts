import t from 'tap'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { scriptedLlm, toolCall } from '../helpers/llm.js'
import { EVENT_TYPES, EXTENSION_EVENT_TYPES, LIFECYCLE_EVENT, TERMINAL_EVENT_TYPES } from '../../src/runs/index.js'

const origin = JSON.parse(readFileSync(new URL('../fixtures/origin-event-types.json', import.meta.url), 'utf8')) as { event_types: string[], terminal_event_types: string[] }

t.test('the catalogue against the origin\'s event types: every type we emit is the origin\'s or a declared extension', async t => {
  const originTypes = new Set(origin.event_types)
  t.same(EVENT_TYPES.filter(type => !originTypes.has(type) && !EXTENSION_EVENT_TYPES.includes(type)), [], 'no type of ours is missing from the fixture unless declared ours')
  t.same(EXTENSION_EVENT_TYPES.filter(type => originTypes.has(type)), [], 'an extension never reuses an origin name')
  t.same([...TERMINAL_EVENT_TYPES].sort(), [...origin.terminal_event_types].sort(), 'the same two ends')
  t.same([...new Set(Object.values(LIFECYCLE_EVENT))].sort(), ['run.completed', 'run.failed', 'run.queued', 'run.started'])
})

t.test('every type of the catalogue is emitted by some run, and runs emit nothing else', async t => {
  const llm = await scriptedLlm(t, (_, body) => {
    const last = body.messages.at(-1)
    if (last.role === 'user' && last.content === 'break') return { status: 503, body: 'overloaded' }
    if (last.role === 'user') return { message: toolCall(`call-${body.messages.length}`, last.content === 'tools' ? 'word_count' : 'no_such_tool', { text: 'a b' }), usage: { prompt_tokens: 3, completion_tokens: 1 } }
    return { message: { role: 'assistant', content: 'done' }, usage: { prompt_tokens: 5, completion_tokens: 1 } }
  })
  const { harnessUrl } = await startTestGateway(t, { HARNESS_LLM_URL: llm.url })
  const run = async (body: object): Promise<any> => (await fetch(`${harnessUrl}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json()
  const records = [
    await run({ message: 'hi', mode: 'echo', options: { steps: 2 } }),
    await run({ message: 'tools' }),
    await run({ message: 'unknown tool' }),
    await run({ message: 'break' })
  ]
  const { run_id: slow } = await (await fetch(`${harnessUrl}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'x', mode: 'echo', options: { steps: 50, delay_ms: 50 } }) })).json() as any
  await fetch(`${harnessUrl}/runs/${slow}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
  records.push(await eventually(async () => (await fetch(`${harnessUrl}/runs/${slow}`)).json() as Promise<any>, r => r.status === 'cancelled'))
  t.same(records.map(r => r.status), ['succeeded', 'succeeded', 'succeeded', 'failed', 'cancelled'])

  const emitted = new Set(records.flatMap(r => r.events.map((e: any) => e.type)))
  t.same([...emitted].filter(type => !EVENT_TYPES.includes(type)), [], 'nothing outside the catalogue')
  t.same(EVENT_TYPES.filter(type => !emitted.has(type)), [], 'every catalogue type was emitted')
  for (const r of records) {
    const types = r.events.map((e: any) => e.type)
    t.equal(types[0], 'run.queued', `${r.mode} ${r.status}: starts queued`)
    t.equal(types.filter((type: string) => TERMINAL_EVENT_TYPES.has(type)).length, 1, 'one end')
    t.ok(TERMINAL_EVENT_TYPES.has(types.at(-1)), 'and it is the last event')
  }
})
