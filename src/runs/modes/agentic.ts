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

/**
 * A tool loop against an OpenAI-compatible chat-completions endpoint: ask the
 * model, run the tools it calls, give it the results, until it answers
 * (at most MAX_TURNS requests). Each model call and tool call is a step.
 */
export function agentic (llm: LlmSettings): Mode {
  return async ({ message, signal, emit }) => {
    if (!llm.url) throw new ModeError('model_not_configured', 'HARNESS_LLM_URL is not set')
    const endpoint = `${llm.url.replace(/\/$/, '')}/chat/completions`
    const messages: ChatMessage[] = [{ role: 'user', content: message }]
    for (let turn = 1; turn <= MAX_TURNS; turn++) {
      const reply = await complete(endpoint, llm, messages, signal)
      await emit({ type: 'model', turn, tool_calls: reply.tool_calls?.length ?? 0 })
      if (!reply.tool_calls?.length) return { output: reply.content ?? '' }
      messages.push({ role: 'assistant', content: reply.content ?? null, tool_calls: reply.tool_calls })
      for (const call of reply.tool_calls) {
        const result = runTool(call)
        await emit({ type: 'tool', turn, name: call.function.name, arguments: call.function.arguments, result })
        messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) })
      }
    }
    throw new ModeError('max_turns', `no answer after ${MAX_TURNS} model calls`)
  }
}

async function complete (endpoint: string, llm: LlmSettings, messages: ChatMessage[], signal: AbortSignal): Promise<ChatMessage> {
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
  const body = await res.json() as { choices?: Array<{ message?: ChatMessage }> }
  const reply = body.choices?.[0]?.message
  if (!reply) throw new ModeError('model_error', 'chat completions answered without a message')
  return reply
}

function runTool (call: ToolCall): unknown {
  const tool = tools[call.function.name]
  if (!tool) return { error: `unknown tool ${call.function.name}` }
  try {
    return tool.run(JSON.parse(call.function.arguments || '{}') as Record<string, unknown>)
  } catch (err) {
    return { error: (err as Error).message }
  }
}
