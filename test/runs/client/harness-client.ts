/**
 * A client of the run harness written from the documented contract of the
 * origin system's client (`@microboxlabs/miot-harness-client`: its README,
 * types and tests), not from its code: what an app built on that client
 * does to us. `runs.create` posts to `/runs:start` and returns `{run_id}`;
 * `runs.stream` yields each SSE frame's data parsed as an event, reading the
 * type from the data (not the `event:` line), throws on an `event: error`
 * frame with its `error` as the code, and on a non-2xx answer with
 * `http_<status>`; `runs.get` returns the record; `skills.list` the list.
 */

export interface HarnessEvent {
  id: string
  run_id: string
  seq: number
  type: string
  message: string
  data: Record<string, any>
  created_at: string
}

export interface HarnessRunRecord {
  run_id: string
  status: string
  events: HarnessEvent[]
  artifacts: Array<Record<string, unknown>>
  answer: string | null
  conversation_id: string | null
  [field: string]: unknown
}

export interface UserRequest {
  message: string
  tenant_id?: string
  mode?: 'auto' | 'canned' | 'meta' | 'agentic' | 'echo'
  conversation_id?: string | null
  [field: string]: unknown
}

export class HarnessApiError extends Error {
  constructor (readonly code: string, readonly runId?: string, readonly body?: unknown, readonly status?: number) {
    super(messageOf(code, body))
    this.name = 'HarnessApiError'
  }
}

function messageOf (code: string, body: unknown): string {
  if (typeof body === 'string' && body !== '') return body
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>
    for (const k of ['message', 'error', 'detail']) if (typeof b[k] === 'string') return b[k] as string
  }
  return code
}

export interface ClientConfig {
  baseUrl: string
  token?: string | null
  headers?: Record<string, string>
}

export function createHarnessClient (config: ClientConfig) {
  const base = config.baseUrl.replace(/\/+$/, '')
  const request = (method: string, path: string, options: { body?: unknown, headers?: Record<string, string>, signal?: AbortSignal } = {}): Promise<Response> => {
    const headers: Record<string, string> = { ...config.headers, ...options.headers }
    if (config.token) headers['Authorization'] = `Bearer ${config.token}`
    if (options.body !== undefined) headers['Content-Type'] = 'application/json'
    return fetch(`${base}${path}`, { method, headers, ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }), ...(options.signal ? { signal: options.signal } : {}) })
  }
  const failure = async (res: Response, runId?: string): Promise<HarnessApiError> => {
    const text = await res.text().catch(() => '')
    let body: unknown = text
    try { body = JSON.parse(text) } catch {}
    return new HarnessApiError(`http_${res.status}`, runId, body, res.status)
  }
  const fetchJson = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await request(method, path, { body, headers: { Accept: 'application/json' } })
    if (!res.ok) throw await failure(res)
    return await res.json() as T
  }

  return {
    runs: {
      create: (body: UserRequest): Promise<{ run_id: string }> => fetchJson('POST', '/runs:start', body),
      get: (id: string): Promise<HarnessRunRecord> => fetchJson('GET', `/runs/${encodeURIComponent(id)}`),
      async * stream (id: string, opts: { lastEventId?: string, signal?: AbortSignal } = {}): AsyncIterable<HarnessEvent> {
        const headers: Record<string, string> = { Accept: 'text/event-stream' }
        if (opts.lastEventId) headers['Last-Event-ID'] = opts.lastEventId
        const res = await request('GET', `/runs/${encodeURIComponent(id)}/stream`, { headers, ...(opts.signal ? { signal: opts.signal } : {}) })
        if (!res.ok) throw await failure(res, id)
        if (!res.body) throw new HarnessApiError('no_body', id, undefined, res.status)
        for await (const frame of frames(res.body)) {
          if (frame.event === 'error') {
            let parsed: { error?: unknown, run_id?: unknown }
            try { parsed = JSON.parse(frame.data) } catch { throw new HarnessApiError('unparseable_error', id, frame.data) }
            throw new HarnessApiError(typeof parsed.error === 'string' ? parsed.error : 'unknown_error', typeof parsed.run_id === 'string' ? parsed.run_id : id)
          }
          if (frame.data === '') continue
          try {
            yield JSON.parse(frame.data) as HarnessEvent
          } catch {
            throw new HarnessApiError('unparseable_event', id, `could not parse the data of a ${frame.event ?? 'message'} frame`)
          }
        }
      }
    },
    skills: {
      list: (): Promise<unknown[]> => fetchJson('GET', '/skills')
    }
  }
}

interface Frame { id?: string, event?: string, data: string }

/** `text/event-stream` frames: CRLF or LF, comments skipped, `data` lines joined, one leading space after the colon dropped. */
async function * frames (body: ReadableStream<Uint8Array>): AsyncIterable<Frame> {
  const decoder = new TextDecoder()
  let buffer = ''
  let fields: { id?: string, event?: string } | undefined
  let data: string[] = []
  const take = (line: string): void => {
    if (line.startsWith(':')) return
    const colon = line.indexOf(':')
    const name = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (name !== 'id' && name !== 'event' && name !== 'data') return
    fields ??= {}
    if (name === 'data') data.push(value)
    else fields[name] = value
  }
  const complete = (): Frame | undefined => {
    const frame = fields ? { ...fields, data: data.join('\n') } : undefined
    fields = undefined
    data = []
    return frame
  }
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true })
    let nl: number
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '')
      buffer = buffer.slice(nl + 1)
      if (line !== '') take(line)
      else {
        const frame = complete()
        if (frame) yield frame
      }
    }
  }
  if (buffer !== '') take(buffer.replace(/\r$/, ''))
  const last = complete()
  if (last) yield last
}
