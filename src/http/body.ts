import { GatewayError } from '../errors.js'
import { ChunkPool } from './chunk-pool.js'

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

export class BodyDiscardedError extends Error {
  readonly code = 'body_discarded'
  constructor () {
    super('the request was answered before its body was read; the rest is discarded')
    this.name = 'BodyDiscardedError'
  }
}

/** Stops and restarts reading the socket (uWS pause/resume, once the response is no longer live a no-op). */
export interface BodyFlow {
  pause(): void
  resume(): void
}

/** Idle chunk buffers a body keeps for itself while it is read. */
const SPARE_CHUNKS = 2
/** Idle chunk buffers kept between bodies: those of 8 uploads' spares and queues at uWS's 512 KiB chunks. */
const POOL_BYTES = 8 * 1024 * 1024
const pool = new ChunkPool(POOL_BYTES)

/**
 * A request body fed by uWS onData, read chunk by chunk: an async iterable
 * whose every chunk is valid only until the next one is asked for. That rule
 * lets the body copy uWS's bytes into a few buffers of its own and reuse
 * them, then hand them to the next body (`ChunkPool`), instead of allocating
 * one per chunk: at upload speed those would pile up as garbage faster than
 * V8 collects external memory (it waits for about 64 MiB of it), which made
 * the process's peak memory track the upload rate.
 *
 * When `highWaterMark` bytes wait unread, the socket is paused, and resumed
 * once they are read, so a slow consumer slows the client down instead of
 * filling memory. Past `limit` bytes the body fails with 413.
 */
export class BodyReader implements AsyncIterable<Buffer> {
  private readonly queue: Buffer[] = []
  private readonly spare: ArrayBuffer[] = []
  private queued = 0
  private lent: Buffer | undefined
  private waiter: { resolve: (chunk: Buffer | null) => void, reject: (err: Error) => void } | undefined
  private ended = false
  private failure: Error | undefined
  private paused = false
  private received = 0

  constructor (private readonly flow: BodyFlow, private readonly highWaterMark: number, private readonly limit: number) {}

  /** Why the body failed (limit, client gone), if it did. */
  get errored (): Error | undefined {
    return this.failure
  }

  /** Called from uWS onData, synchronously. */
  feed (chunk: ArrayBuffer, isLast: boolean): void {
    if (this.failure) return
    if (chunk.byteLength > 0) {
      this.received += chunk.byteLength
      if (this.received > this.limit) {
        this.destroy(payloadTooLarge(this.limit))
        return
      }
      const copy = this.take(chunk.byteLength)
      copy.set(new Uint8Array(chunk))
      if (this.waiter) {
        this.lent = copy
        this.settle(copy)
      } else {
        this.queue.push(copy)
        this.queued += copy.length
      }
    }
    if (isLast) {
      this.ended = true
      if (this.waiter && this.queue.length === 0) this.settle(null)
    } else if (this.queued >= this.highWaterMark && !this.paused) {
      this.paused = true
      this.flow.pause()
    }
  }

  /** The next chunk, or null at the end. The chunk read before it is no longer valid. */
  read (): Promise<Buffer | null> {
    if (this.lent) {
      this.recycle(this.lent.buffer as ArrayBuffer)
      this.lent = undefined
    }
    if (this.failure) return Promise.reject(this.failure)
    if (this.waiter) return Promise.reject(new Error('a body is read one chunk at a time'))
    const next = this.queue.shift()
    if (next) {
      this.queued -= next.length
      this.lent = next
      this.resumeIfDrained()
      return Promise.resolve(next)
    }
    if (this.ended) {
      this.release()
      return Promise.resolve(null)
    }
    this.resumeIfDrained()
    return new Promise((resolve, reject) => { this.waiter = { resolve, reject } })
  }

  /** Fails the body: pending and later reads reject with `err`. */
  destroy (err: Error): void {
    if (this.failure) return
    this.failure = err
    // Queued chunks were never handed out, so they are free to reuse; the chunk lent last may still be in its reader's hands.
    for (const chunk of this.queue) this.spare.push(chunk.buffer as ArrayBuffer)
    this.queue.length = 0
    this.release()
    const waiter = this.waiter
    this.waiter = undefined
    waiter?.reject(err)
  }

  [Symbol.asyncIterator] (): AsyncIterator<Buffer> {
    return {
      next: async () => {
        const chunk = await this.read()
        return chunk === null ? { done: true, value: undefined } : { done: false, value: chunk }
      }
    }
  }

  private take (size: number): Buffer {
    const i = this.spare.findIndex(b => b.byteLength >= size)
    return Buffer.from(i >= 0 ? this.spare.splice(i, 1)[0]! : pool.take(size), 0, size)
  }

  /** Keeps the largest idle buffers (chunk sizes vary, and a small buffer fits fewer of them); the others go to the pool. */
  private recycle (buffer: ArrayBuffer): void {
    if (this.spare.length < SPARE_CHUNKS) {
      this.spare.push(buffer)
      return
    }
    let smallest = 0
    for (let i = 1; i < this.spare.length; i++) if (this.spare[i]!.byteLength < this.spare[smallest]!.byteLength) smallest = i
    if (this.spare[smallest]!.byteLength < buffer.byteLength) [this.spare[smallest], buffer] = [buffer, this.spare[smallest]!]
    pool.give(buffer)
  }

  /** The body is done with: its idle buffers serve the bodies to come. */
  private release (): void {
    for (const buffer of this.spare) pool.give(buffer)
    this.spare.length = 0
  }

  private settle (chunk: Buffer | null): void {
    const waiter = this.waiter!
    this.waiter = undefined
    waiter.resolve(chunk)
  }

  private resumeIfDrained (): void {
    if (this.paused && this.queued < this.highWaterMark) {
      this.paused = false
      this.flow.resume()
    }
  }
}

export function payloadTooLarge (limit: number): GatewayError {
  return new GatewayError('payload_too_large', `request body exceeds ${limit} bytes`, { details: { body: `must not exceed ${limit} bytes` } })
}
