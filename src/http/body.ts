import { Readable } from 'node:stream'
import type { HttpResponse } from 'uWebSockets.js'
import { GatewayError } from './errors.js'

/** uWS neuters the ArrayBuffer when the callback returns, so every chunk is copied out. */
export function copyChunk (chunk: ArrayBuffer): Buffer {
  return Buffer.copyBytesFrom(new Uint8Array(chunk))
}

export class BodyAbortedError extends Error {
  readonly code = 'body_aborted'
  constructor () {
    super('client disconnected before the body was read')
    this.name = 'BodyAbortedError'
  }
}

/**
 * A request body as a Node Readable, fed by uWS onData. When the consumer
 * falls behind (push() returns false) the socket is paused, and resumed on
 * the next read, so a slow storage backend slows the client down instead of
 * filling memory. Past `limit` bytes the stream fails with 413.
 */
export class BodyStream extends Readable {
  private paused = false
  private received = 0

  constructor (private readonly res: HttpResponse, private readonly isLive: () => boolean, highWaterMark: number, private readonly limit: number) {
    super({ highWaterMark })
  }

  get bytesReceived (): number {
    return this.received
  }

  /** Called from uWS onData, synchronously. */
  feed (chunk: ArrayBuffer, isLast: boolean): void {
    if (this.destroyed) return
    if (chunk.byteLength > 0) {
      this.received += chunk.byteLength
      if (this.received > this.limit) {
        this.destroy(payloadTooLarge(this.limit))
        return
      }
      if (!this.push(copyChunk(chunk)) && !isLast && !this.paused && this.isLive()) {
        this.paused = true
        this.res.pause()
      }
    }
    if (isLast) this.push(null)
  }

  override _read (): void {
    if (this.paused) {
      this.paused = false
      if (this.isLive()) this.res.resume()
    }
  }
}

export function payloadTooLarge (limit: number): GatewayError {
  return new GatewayError('payload_too_large', `request body exceeds ${limit} bytes`, { details: { body: `must not exceed ${limit} bytes` } })
}

export interface BodyLimitExceeded {
  readonly exceeded: true
  readonly received: number
}

/**
 * Collects a small body (JSON) up to `limit` bytes. Calls back once: with the
 * bytes, or with `exceeded` as soon as the limit is passed so the caller can
 * answer 413 without reading the rest.
 */
export function collectBody (res: HttpResponse, limit: number, done: (body: Buffer | BodyLimitExceeded) => void): void {
  const chunks: Buffer[] = []
  let received = 0
  let finished = false
  res.onData((chunk, isLast) => {
    if (finished) return
    received += chunk.byteLength
    if (received > limit) {
      finished = true
      done({ exceeded: true, received })
      return
    }
    if (chunk.byteLength > 0) chunks.push(copyChunk(chunk))
    if (isLast) {
      finished = true
      done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received))
    }
  })
}
