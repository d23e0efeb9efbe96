import { ModeError, type Mode } from './types.js'

export interface LlmSettings {
  url: string | undefined
  model: string
  apiKey: string | undefined
}

interface ToolCall { id: string, type: 'function', function: { name: string, arguments: string } }
interface ChatMessage { role: 'system' | 'user' | 'assistant' | 'tool', content: string | null, tool_calls?: ToolCall[], tool_call_id?: string }

const MAX_TURNS = 8

/** The tools a model may call; small and side-effect free. */
const tools: Record<string, { description: string, parameters: object, run: (args: Record<string, unknown>) => unknown }> = {
  current_time: {
    description: 'The current time as an ISO 8601 string (UTC).',
    parameters: { type: 'object', properties: {} },
    run: () => new Date().toISOString()
  },
  word_count: {
    description: 'Counts the words of a text.',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    run: args => String(args['text'] ?? '').split(/\s+/).filter(Boolean).length
  }
}

const toolSpecs = Object.entries(tools).map(([name, t]) => ({ type: 'function', function: { name, description: t.description, parameters: t.parameters } }))

/** Tool outputs longer than this (as JSON) are left out of `tool.completed`, as the origin caps its frames. */
const OUTPUT_CAP_BYTES = 2048
const AGENT = { agent: 'agentic', graph: 'agentic' }

/**
 * A tool loop against an OpenAI-compatible chat-completions endpoint: ask the
 * model, run the tools it calls, give it the results, until it answers
 * (at most MAX_TURNS requests). Each model call is `agent.started` …
 * `agent.completed` (with `usage.recorded` between when the endpoint reports
 * usage), each tool call `tool.started` then `tool.completed` or
 * `tool.failed`, and the answer `answer.completed`: the origin harness's
 * events, with its data fields.
 */
export function agentic (llm: LlmSettings): Mode {
  return async ({ message, signal, emit }) => {
    if (!llm.url) throw new ModeError('model_not_configured', 'HARNESS_LLM_URL is not set')
    const endpoint = `${llm.url.replace(/\/$/, '')}/chat/completions`
    const messages: ChatMessage[] = [{ role: 'user', content: message }]
    for (let turn = 1; turn <= MAX_TURNS; turn++) {
      await emit('agent.started', `Model call ${turn}`, { ...AGENT, turn })
      const started = performance.now()
      let completion: Completion
      try {
        completion = await complete(endpoint, llm, messages, signal)
      } catch (err) {
        if (!signal.aborted) await emit('agent.completed', `Model call ${turn} failed`, { ...AGENT, turn, duration_ms: elapsed(started), exit_reason: 'failure', error: (err as Error).message })
        throw err
      }
      const { reply, usage, model } = completion
      if (usage) await emit('usage.recorded', `Usage of model call ${turn}`, { agent: AGENT.agent, model, ...usage })
      const calls = reply.tool_calls ?? []
      await emit('agent.completed', `Model call ${turn} done`, { ...AGENT, turn, duration_ms: elapsed(started), exit_reason: calls.length > 0 ? 'next_action' : 'ok', tool_calls: calls.length })
      if (calls.length === 0) {
        const answer = reply.content ?? ''
        await emit('answer.completed', 'Answer completed', { text: answer, length: answer.length })
        return { output: answer }
      }
      messages.push({ role: 'assistant', content: reply.content ?? null, tool_calls: calls })
      for (const call of calls) {
        const name = call.function.name
        const ids = { tool: name, tool_call_id: call.id }
        const input = parseArguments(call.function.arguments)
        await emit('tool.started', `Starting ${name}`, { ...ids, input_keys: input.ok ? Object.keys(input.value).sort() : [] })
        const outcome = input.ok ? runTool(name, input.value) : input
        if (outcome.ok) {
          await emit('tool.completed', `Completed ${name}`, { ...ids, result_shape: shapeOf(outcome.value), ...capped(outcome.value) })
        } else {
          await emit('tool.failed', `Tool ${name} failed`, { ...ids, error: outcome.error, error_type: outcome.errorType, reason: outcome.error })
        }
        messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(outcome.ok ? outcome.value : { error: outcome.error }) })
      }
    }
    throw new ModeError('max_turns', `no answer after ${MAX_TURNS} model calls`)
  }
}

interface Completion {
  reply: ChatMessage
  model: string
  /** The origin's usage fields, from the endpoint's `usage` when it sent one. */
  usage: Record<string, number> | undefined
}

interface OpenAiUsage { prompt_tokens?: unknown, completion_tokens?: unknown, prompt_tokens_details?: { cached_tokens?: unknown } }

async function complete (endpoint: string, llm: LlmSettings, messages: ChatMessage[], signal: AbortSignal): Promise<Completion> {
  let res: Response
  try {
    res = await fetch(endpoint, {
      method: 'POST',
      signal,
      headers: { 'content-type': 'application/json', ...(llm.apiKey ? { authorization: `Bearer ${llm.apiKey}` } : {}) },
      body: JSON.stringify({ model: llm.model, messages, tools: toolSpecs })
    })
  } catch (err) {
    if (signal.aborted) throw err
    throw new ModeError('model_unreachable', (err as Error).message)
  }
  if (!res.ok) throw new ModeError('model_error', `chat completions answered ${res.status}: ${(await res.text()).slice(0, 200)}`)
  const body = await res.json() as { model?: unknown, choices?: Array<{ message?: ChatMessage }>, usage?: OpenAiUsage }
  const reply = body.choices?.[0]?.message
  if (!reply) throw new ModeError('model_error', 'chat completions answered without a message')
  return { reply, model: typeof body.model === 'string' ? body.model : llm.model, usage: body.usage ? usageOf(body.usage) : undefined }
}

function usageOf (usage: OpenAiUsage): Record<string, number> {
  return {
    input_tokens: count(usage.prompt_tokens),
    output_tokens: count(usage.completion_tokens),
    cache_read_input_tokens: count(usage.prompt_tokens_details?.cached_tokens),
    cache_creation_input_tokens: 0
  }
}

const count = (n: unknown): number => typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : 0

const elapsed = (since: number): number => Math.round(performance.now() - since)

type Outcome = { ok: true, value: unknown } | { ok: false, error: string, errorType: string }

function parseArguments (text: string): { ok: true, value: Record<string, unknown> } | { ok: false, error: string, errorType: string } {
  try {
    const value: unknown = JSON.parse(text || '{}')
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return { ok: true, value: value as Record<string, unknown> }
    return { ok: false, error: 'tool arguments must be a JSON object', errorType: 'TypeError' }
  } catch (err) {
    return { ok: false, error: (err as Error).message, errorType: 'SyntaxError' }
  }
}

function runTool (name: string, args: Record<string, unknown>): Outcome {
  const tool = tools[name]
  if (!tool) return { ok: false, error: `unknown tool ${name}`, errorType: 'KeyError' }
  try {
    return { ok: true, value: tool.run(args) }
  } catch (err) {
    return { ok: false, error: (err as Error).message, errorType: (err as Error).name }
  }
}

/** The origin's `result_shape`: what kind of value a tool returned and how big it is. */
function shapeOf (value: unknown): { type: string, length: number } {
  if (Array.isArray(value)) return { type: 'list', length: value.length }
  if (value === null || value === undefined) return { type: 'none', length: 0 }
  if (typeof value === 'object') return { type: 'dict', length: Object.keys(value).length }
  return { type: typeof value, length: 1 }
}

function capped (value: unknown): { output?: unknown, truncated?: true } {
  const json = JSON.stringify(value) ?? 'null'
  return Buffer.byteLength(json) <= OUTPUT_CAP_BYTES ? { output: value } : { truncated: true }
}
