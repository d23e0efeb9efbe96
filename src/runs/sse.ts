import type { RequestContext } from '../http/index.js'
import { errorFrame, formatEvent } from './events.js'
import type { RunEvent } from './types.js'

/** A replay is written in pieces of about this many bytes (or a quarter of the buffer), each once the socket took the one before. */
const REPLAY_CHUNK_BYTES = 64 * 1024

/**
 * One server-sent-event subscriber. Writes go straight to the socket; what
 * the socket has not taken yet is counted. A subscriber that falls more than
 * `maxBuffered` bytes behind, or whose socket takes nothing for two heartbeat
 * intervals, gets a final `event: error` frame (`stream_overflow`, with the
 * last id it was sent, to resume from) and is closed, so one slow reader
 * never holds memory or delays the others. What one subscriber holds is
 * therefore at most `maxBuffered` or one event, whichever is larger. Events at or before the last id
 * sent (or the caller's Last-Event-ID) are never sent again.
 */
export class SseStream {
  private buffered = 0
  private backedUpAt = 0
  private heartbeat: NodeJS.Timeout | undefined
  private readonly closeHandlers: Array<() => void> = []
  private writable: Array<() => void> = []
  private readonly chunkBytes: number
  closed = false

  /** `overflowFrame` is the final frame for a subscriber that fell behind; a run's stream names the run in it. */
  constructor (
    private readonly ctx: RequestContext,
    runId: string,
    private readonly maxBuffered: number,
    heartbeatMs: number,
    private lastId: number,
    private readonly overflowFrame = (lastId: number): string => errorFrame(runId, 'stream_overflow', lastId)
  ) {
    this.chunkBytes = Math.min(REPLAY_CHUNK_BYTES, Math.floor(maxBuffered / 4))
    ctx.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' })
    ctx.write(': stream open\n\n')
    ctx.onWritable(() => {
      this.buffered = 0
      this.wake()
      return true
    })
    ctx.onAbort(() => this.close(false))
    this.heartbeat = setInterval(() => {
      if (this.buffered > 0 && performance.now() - this.backedUpAt >= 2 * heartbeatMs) this.overflow()
      else this.send(': heartbeat\n\n')
    }, heartbeatMs)
  }

  onClose (handler: () => void): void {
    this.closeHandlers.push(handler)
  }

  event (e: RunEvent): void {
    if (this.closed || e.id <= this.lastId) return
    this.lastId = e.id
    this.send(formatEvent(e))
  }

  /**
   * Writes `list` from index `from` on, in pieces of about REPLAY_CHUNK_BYTES,
   * until the socket backs up; returns the index of the first event not
   * written (`list.length` when all were). Wait for `drained()` to go on.
   */
  replay (list: readonly RunEvent[], from: number): number {
    let i = from
    while (i < list.length && !this.closed) {
      let text = ''
      while (i < list.length && text.length < this.chunkBytes) {
        const e = list[i++]!
        if (e.id <= this.lastId) continue
        this.lastId = e.id
        text += formatEvent(e)
      }
      if (text !== '' && !this.send(text)) return i
    }
    return i
  }

  /** Resolves when the socket has taken what was queued for it, or the stream closed. */
  drained (): Promise<void> {
    if (this.closed || this.buffered === 0) return Promise.resolve()
    return new Promise(resolve => { this.writable.push(resolve) })
  }

  /** Ends the stream (after a terminal event, or when nothing more will come). */
  end (): void {
    this.close(true)
  }

  /**
   * False when the socket did not take all of `text` (it is queued, and
   * counted). Only a subscriber already behind overflows: one event larger
   * than the buffer, queued on a socket that had taken everything before it,
   * is let through whole, or no reconnect could ever get past it.
   */
  private send (text: string): boolean {
    if (this.closed) return false
    if (this.ctx.write(text)) return true
    const behind = this.buffered > 0
    if (!behind) this.backedUpAt = performance.now()
    this.buffered += text.length
    if (behind && this.buffered > this.maxBuffered) this.overflow()
    return false
  }

  private overflow (): void {
    this.ctx.write(this.overflowFrame(this.lastId))
    this.close(true)
  }

  private wake (): void {
    const waiting = this.writable
    this.writable = []
    for (const resolve of waiting) resolve()
  }

  private close (end: boolean): void {
    if (this.closed) return
    this.closed = true
    clearInterval(this.heartbeat)
    if (end) this.ctx.end()
    this.wake()
    for (const handler of this.closeHandlers) handler()
  }
}
