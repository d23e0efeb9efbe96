import { ApiError, call } from './api.js'

export interface Frame {
  id: string | undefined
  event: string
  data: string
}

export type StreamState = 'live' | 'reconnecting' | 'ended' | 'failed'

export interface StreamOptions {
  /** Each frame in order; return true for the last one of the stream (a run's end): no reconnect after it. */
  onFrame(frame: Frame): boolean | void
  onState(state: StreamState, detail?: string): void
}

const MIN_DELAY_MS = 250
const MAX_DELAY_MS = 2000

/**
 * A server-sent-event stream read with fetch (EventSource cannot send the
 * Authorization header). Whenever it drops before its last frame (the
 * network, a gateway restart, `stream_overflow`) it reconnects with
 * `Last-Event-ID` set to the last id it was given, so nothing is read twice
 * or skipped. A refusal (4xx) stops it.
 */
export class EventStream {
  lastId: string | undefined
  private readonly abort = new AbortController()

  constructor (private readonly path: string, private readonly options: StreamOptions) {
    void this.run()
  }

  stop (): void {
    this.abort.abort()
  }

  private async run (): Promise<void> {
    let delay = MIN_DELAY_MS
    while (!this.abort.signal.aborted) {
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream' }
        if (this.lastId !== undefined) headers['last-event-id'] = this.lastId
        const res = await call(this.path, { headers, signal: this.abort.signal })
        this.options.onState('live')
        delay = MIN_DELAY_MS
        if (await this.read(res)) {
          this.options.onState('ended')
          return
        }
      } catch (err) {
        if (this.abort.signal.aborted) return
        if (err instanceof ApiError && err.status < 500) {
          this.options.onState('failed', err.detail)
          return
        }
      }
      this.options.onState('reconnecting')
      await new Promise(resolve => setTimeout(resolve, delay))
      delay = Math.min(delay * 2, MAX_DELAY_MS)
    }
  }

  /** Reads frames until the stream ends; true when its last frame said so. */
  private async read (res: Response): Promise<boolean> {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
    let buffer = ''
    try {
      while (true) {
        const { value, done } = await reader.read()
        if (done) return false
        buffer += value.replace(/\r\n?/g, '\n')
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const frame = parse(buffer.slice(0, cut))
          buffer = buffer.slice(cut + 2)
          if (frame === undefined) continue
          if (frame.id !== undefined) this.lastId = frame.id
          if (frame.event === 'error') return false
          if (this.options.onFrame(frame) === true) return true
        }
      }
    } finally {
      reader.cancel().catch(() => undefined)
    }
  }
}

function parse (block: string): Frame | undefined {
  let id: string | undefined
  let event = 'message'
  const data: string[] = []
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'id') id = value
    else if (field === 'event') event = value
    else if (field === 'data') data.push(value)
  }
  return data.length === 0 && id === undefined ? undefined : { id, event, data: data.join('\n') }
}
