import type { RequestContext } from '../http/index.js'
import { errorFrame, formatEvent } from './events.js'
import type { RunEvent } from './types.js'

/**
 * One server-sent-event subscriber. Writes go straight to the socket; what
 * the socket has not taken yet is counted, and a subscriber that falls more
 * than `maxBuffered` bytes behind gets a final `event: error` frame
 * (`stream_overflow`, with the last id it was sent, to resume from) and is
 * closed, so one slow reader never holds memory or delays the others.
 * Events at or before the last id sent (or the caller's Last-Event-ID) are
 * never sent again.
 */
export class SseStream {
  private buffered = 0
  private heartbeat: NodeJS.Timeout | undefined
  private closeHandlers: Array<() => void> = []
  closed = false

  constructor (private readonly ctx: RequestContext, private readonly runId: string, private readonly maxBuffered: number, heartbeatMs: number, private lastId: number) {
    ctx.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    ctx.write(': stream open\n\n')
    ctx.onWritable(() => {
      this.buffered = 0
      return true
    })
    ctx.onAbort(() => this.close(false))
    this.heartbeat = setInterval(() => this.send(': heartbeat\n\n'), heartbeatMs)
  }

  onClose (handler: () => void): void {
    this.closeHandlers.push(handler)
  }

  event (e: RunEvent): void {
    if (this.closed || e.id <= this.lastId) return
    this.lastId = e.id
    this.send(formatEvent(e))
  }

  /** Several events in one write (a replay slice). */
  events (list: readonly RunEvent[]): void {
    let text = ''
    for (const e of list) {
      if (e.id <= this.lastId) continue
      this.lastId = e.id
      text += formatEvent(e)
    }
    if (text !== '') this.send(text)
  }

  /** Ends the stream (after a terminal event, or when nothing more will come). */
  end (): void {
    this.close(true)
  }

  private send (text: string): void {
    if (this.closed) return
    if (!this.ctx.write(text)) this.buffered += text.length
    if (this.buffered > this.maxBuffered) {
      this.ctx.write(errorFrame(this.runId, 'stream_overflow', this.lastId))
      this.close(true)
    }
  }

  private close (end: boolean): void {
    if (this.closed) return
    this.closed = true
    clearInterval(this.heartbeat)
    if (end) this.ctx.end()
    for (const handler of this.closeHandlers) handler()
  }
}
