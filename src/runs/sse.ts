import type { RequestContext } from '../http/index.js'
import { formatEvent } from './events.js'
import type { RunEvent } from './types.js'

/**
 * One server-sent-event subscriber. Writes go straight to the socket; what
 * the socket has not taken yet is counted, and a subscriber that falls more
 * than `maxBuffered` bytes behind gets a final `stream.overflow` event (with
 * the last id it was sent, to resume from) and is closed, so one slow reader
 * never holds memory or delays the others.
 */
export class SseStream {
  private buffered = 0
  private lastId = 0
  private heartbeat: NodeJS.Timeout | undefined
  private closed = false

  constructor (private readonly ctx: RequestContext, private readonly maxBuffered: number, heartbeatMs: number, private readonly onClose: () => void) {
    ctx.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    ctx.write(': stream open\n\n')
    ctx.onWritable(() => {
      this.buffered = 0
      return true
    })
    ctx.onAbort(() => this.close(false))
    this.heartbeat = setInterval(() => this.send(': heartbeat\n\n'), heartbeatMs)
  }

  event (e: RunEvent): void {
    if (this.closed || e.id <= this.lastId) return
    this.lastId = e.id
    this.send(formatEvent(e))
  }

  /** Ends the stream (after a terminal event). */
  end (): void {
    this.close(true)
  }

  private send (text: string): void {
    if (this.closed) return
    if (!this.ctx.write(text)) this.buffered += text.length
    if (this.buffered > this.maxBuffered) {
      this.ctx.write(`event: stream.overflow\ndata: ${JSON.stringify({ reason: 'subscriber too slow', last_event_id: this.lastId })}\n\n`)
      this.close(true)
    }
  }

  private close (end: boolean): void {
    if (this.closed) return
    this.closed = true
    clearInterval(this.heartbeat)
    if (end) this.ctx.end()
    this.onClose()
  }
}
