// A subscriber to a run's event stream on a raw socket (HTTP/1.1 by hand,
// chunked transfer decoding, SSE parsing): a few hundred bytes of JS state
// each, so ten thousand of them fit in one process.
import net from 'node:net'
import { StringDecoder } from 'node:string_decoder'

/** Wall-clock milliseconds with sub-millisecond resolution, comparable with the server's ISO stamps. */
export const now = () => performance.timeOrigin + performance.now()

const CRLF2 = Buffer.from('\r\n\r\n')
const CRLF = Buffer.from('\r\n')

/**
 * GET /runs/{id}/stream on its own connection to host:port. Calls
 * onOpen(sub, t) at the `: stream open` comment, onEvent(sub, ev, t) per
 * event, onEnd(sub) at the end of the chunked body or when the socket closes
 * (`ended` tells which). Times are `now()`, read when the bytes arrive.
 */
export class Subscriber {
  constructor (runId, { host, port, onOpen, onEvent, onEnd }) {
    this.runId = runId
    this.onOpen = onOpen
    this.onEvent = onEvent
    this.onEndCb = onEnd
    this.state = 'head'
    this.pending = Buffer.alloc(0)
    this.chunkLeft = 0
    this.decoder = new StringDecoder('utf8')
    this.text = ''
    this.status = undefined
    this.openAt = undefined
    this.ended = false // the server ended the body (chunk of size 0)
    this.closed = false
    this.error = undefined
    this.events = 0
    this.steps = 0
    this.sentAt = now()
    const s = this.socket = net.connect({ host, port })
    s.setNoDelay(true)
    s.on('connect', () => {
      this.sentAt = now()
      s.write(`GET /runs/${encodeURIComponent(runId)}/stream HTTP/1.1\r\nHost: ${host}:${port}\r\nAccept: text/event-stream\r\n\r\n`)
    })
    s.on('data', buf => this.feed(buf, now()))
    s.on('error', err => { this.error ??= err.code ?? err.message })
    s.on('close', () => { this.closed = true; this.finish() })
  }

  finish () {
    if (this.done) return
    this.done = true
    this.onEndCb?.(this)
  }

  close () {
    this.socket.destroy()
  }

  feed (buf, t) {
    this.pending = this.pending.length ? Buffer.concat([this.pending, buf]) : buf
    for (;;) {
      if (this.state === 'head') {
        const i = this.pending.indexOf(CRLF2)
        if (i < 0) return
        const head = this.pending.subarray(0, i).toString('latin1')
        this.pending = this.pending.subarray(i + 4)
        this.status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1])
        const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head)
        if (this.status !== 200 || !chunked) {
          this.error ??= this.status !== 200 ? `HTTP ${this.status}` : 'not chunked'
          this.state = 'dead'
          this.socket.destroy()
          return
        }
        this.state = 'size'
      } else if (this.state === 'size') {
        const i = this.pending.indexOf(CRLF)
        if (i < 0) return
        const size = parseInt(this.pending.subarray(0, i).toString('latin1'), 16)
        this.pending = this.pending.subarray(i + 2)
        if (size === 0) {
          this.ended = true
          this.state = 'dead'
          this.socket.destroy() // uWS keeps the connection alive after the body
          return
        }
        this.chunkLeft = size
        this.state = 'data'
      } else if (this.state === 'data') {
        if (this.pending.length < this.chunkLeft + 2) {
          // Hand over what is there (minus a possible partial CRLF) to keep the buffer small.
          const n = Math.min(this.pending.length, this.chunkLeft)
          if (n > 0 && n === this.pending.length) {
            this.sse(this.decoder.write(this.pending), t)
            this.chunkLeft -= n
            this.pending = Buffer.alloc(0)
          }
          return
        }
        this.sse(this.decoder.write(this.pending.subarray(0, this.chunkLeft)), t)
        this.pending = this.pending.subarray(this.chunkLeft + 2)
        this.chunkLeft = 0
        this.state = 'size'
      } else {
        return
      }
    }
  }

  sse (text, t) {
    this.text += text
    let i
    while ((i = this.text.indexOf('\n\n')) >= 0) {
      const block = this.text.slice(0, i)
      this.text = this.text.slice(i + 2)
      let id, event, data
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          if (line.startsWith(': stream open') && this.openAt === undefined) { this.openAt = t; this.onOpen?.(this, t) }
          continue
        }
        const c = line.indexOf(':')
        const field = c < 0 ? line : line.slice(0, c)
        const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '')
        if (field === 'id') id = Number(value)
        else if (field === 'event') event = value
        else if (field === 'data') data = data === undefined ? value : `${data}\n${value}`
      }
      if (event !== undefined || data !== undefined) {
        this.events++
        if (event === 'echo.step') this.steps++
        this.onEvent?.(this, { id, event: event ?? 'message', data }, t)
      }
    }
  }
}
