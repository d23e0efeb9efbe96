import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

interface Tap { teardown(fn: () => unknown): void }

/** What the scripted endpoint answers to one request: a chat message (and usage), or an HTTP error. */
export type Turn = { message: object, usage?: object } | { status: number, body: string }

export interface ScriptedLlm {
  /** The base URL to give as HARNESS_LLM_URL. */
  url: string
  /** Every request body received, in order, with its path and Authorization header. */
  requests: Array<{ path: string, auth: string | undefined, body: any }>
}

/**
 * An OpenAI-compatible chat-completions server on loopback that answers the
 * nth request with `script(n, body)`; closed at teardown.
 */
export async function scriptedLlm (t: Tap, script: (n: number, body: any) => Turn): Promise<ScriptedLlm> {
  const requests: ScriptedLlm['requests'] = []
  const server = createServer((req, res) => {
    let text = ''
    req.on('data', c => { text += c })
    req.on('end', () => {
      const body = JSON.parse(text)
      requests.push({ path: req.url ?? '', auth: req.headers.authorization, body })
      const turn = script(requests.length, body)
      if ('status' in turn) {
        res.statusCode = turn.status
        res.end(turn.body)
        return
      }
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ id: `cmpl-${requests.length}`, model: body.model, choices: [{ index: 0, message: turn.message, finish_reason: 'stop' }], ...(turn.usage ? { usage: turn.usage } : {}) }))
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => server.close(resolve)))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests }
}

/** A tool call as a model sends it. */
export function toolCall (id: string, name: string, args: object | string): object {
  return { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) } }] }
}
