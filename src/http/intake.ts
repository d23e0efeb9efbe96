import { GatewayError } from '../errors.js'
import { BodyDiscardedError, copyChunk, payloadTooLarge, type BodyFlow, type BodyReader } from './body.js'
import type { BodyBudget } from './budget.js'

export interface Answer {
  readonly status: number
  readonly body: unknown
  readonly headers: Record<string, string> | undefined
  readonly close: boolean
}

/** The request an intake reads for: its socket flow and its one response. */
export interface Exchange extends BodyFlow {
  /** The gateway stopped reading the socket (pause()): the client cannot send, so it is not slow. */
  readonly readingPaused: boolean
  send(status: number, body?: unknown, headers?: Record<string, string>, closeConnection?: boolean): void
}

export type CutReason = 'size' | 'time' | 'slow'

export interface IntakeHost<E> {
  /** Memory for the bodies of requests their route's check let in. */
  readonly budget: BodyBudget
  /** Memory for bytes no check has vouched for: before a route's check passes, and on routes without one (login). */
  readonly openBudget: BodyBudget
  /** Bytes a second a body must keep up, over RATE_WINDOW_TICKS ticks (HTTP_BODY_MIN_BYTES_PER_S). */
  readonly minBytesPerS: number
  readonly drainMaxBytes: number
  readonly drainTimeoutMs: number
  /** Bytes read and discarded. */
  drained(bytes: number): void
  /** A drain stopped before the end of the body. */
  cutShort(reason: CutReason): void
  /** A collected body is whole, and its route let the request in. */
  collected(intake: Intake<E>): void
  /** Collecting stopped with an answer of its own: past the route's limit, past the budget, or too slow. */
  refused(intake: Intake<E>, err: GatewayError): void
}

/**
 * Ticks (one a second) a body's rate is measured over. Shorter than the idle
 * timeout of either uWS build (about 10 s on 20.30, checked every 4 s, so
 * from 8 s; 30 s on 20.57): a body that stalls is answered before uWS would
 * close its connection without a word.
 */
export const RATE_WINDOW_TICKS = 4

/**
 * `collect`: a JSON body gathered whole; `stream`: fed to a BodyReader;
 * `drain`: read and discarded (the answer is known, or the route reads no
 * body); `cut`: no longer read at all.
 */
export type IntakeMode = 'collect' | 'stream' | 'drain' | 'cut'

/**
 * The body of one request, from uWS onData: where its bytes go, what memory
 * they hold, and how an answer given before the end of it reaches the client.
 *
 * An answer is never sent while the client is still sending: uWS would then
 * close the socket with bytes unread, the kernel answers those with a reset,
 * and a reset that overtakes the answer destroys it (a Node fetch client
 * sees EPIPE). So the rest of the body is read and discarded first, up to
 * `drainMaxBytes` and `drainTimeoutMs`; then the answer goes out and the
 * connection stays usable. Past either bound, see cut().
 */
export class Intake<E> {
  mode: IntakeMode = 'drain'
  received = 0
  complete = false
  /** The route let the request in: its authorize hook passed, or it has none. */
  authorized = false
  /** The budget could not hold the body; the answer is a 503 unless the route's check refuses first. */
  overloaded = false
  limit = Infinity
  stream: BodyReader | undefined
  auth: unknown
  readonly onData: (chunk: ArrayBuffer, isLast: boolean) => void
  private chunks: Buffer[] = []
  /** A declared body's one buffer, once admitted; `filled` bytes of it are in. */
  private whole: Buffer | undefined
  private filled = 0
  private reserved = 0
  private drainedBytes = 0
  private answer: Answer | undefined
  private timer: NodeJS.Timeout | undefined
  /** Where `reserved` was taken from: the open budget until the route's check let the request in. */
  private budget: BodyBudget
  /** `received` at each of the last ticks while the client could send. */
  private samples: number[] = [0]
  /** The body fell below the minimum rate: whatever the answer, it goes out at once, with a close. */
  private slow = false
  private done = false

  constructor (readonly exchange: Exchange, readonly entry: E | undefined, readonly declared: number | undefined, private readonly host: IntakeHost<E>) {
    this.onData = (chunk, isLast) => { this.data(chunk, isLast) }
    this.budget = host.openBudget
  }

  /** Still reading (or waiting for) body bytes: the rate is measured. */
  get reading (): boolean {
    return !this.done && !this.complete && this.mode !== 'cut'
  }

  /**
   * One second passed. A body that sent less than the minimum rate over the
   * last RATE_WINDOW_TICKS seconds, not counting time the gateway itself
   * held the socket paused, is refused (408, connection closed); a drain
   * that stalls sends its answer now. Either way the client hears why
   * before uWS's idle timeout closes the connection without an answer.
   */
  tick (): boolean {
    if (!this.reading) return false
    if (this.exchange.readingPaused) {
      this.samples = [this.received]
      return true
    }
    this.samples.push(this.received)
    if (this.samples.length <= RATE_WINDOW_TICKS) return true
    const sent = this.received - this.samples.shift()!
    if (sent >= this.host.minBytesPerS * RATE_WINDOW_TICKS) return true
    this.slow = true
    if (this.answer !== undefined) this.cut('slow')
    else if (this.mode === 'collect' || this.mode === 'stream') this.host.refused(this, tooSlow(this.host.minBytesPerS))
    return this.reading
  }

  /** The whole collected body. */
  body (): Buffer {
    if (this.whole !== undefined) return this.whole
    return this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.received)
  }

  /**
   * Lets the body in once its route's check passed: takes the budget for all
   * of a declared body at once, so one that will not fit is refused now
   * rather than after it was partly buffered, and gives it one buffer of its
   * length, so the bytes are not held twice on the way (pieces, then their
   * concatenation). False when the budget cannot hold it.
   */
  admit (budget: BodyBudget): boolean {
    this.authorized = true
    if (budget !== this.budget) {
      const held = this.reserved
      this.budget.give(held)
      this.budget = budget
      this.reserved = 0
      if (!budget.take(held)) return false
      this.reserved = held
    }
    // Unvouched bytes are taken as they come: a client that declares a body and trickles it holds only what it sent.
    if (this.declared === undefined || budget === this.host.openBudget) return true
    if (this.declared > this.reserved && !budget.take(this.declared - this.reserved)) return false
    this.reserved = this.declared
    const whole = Buffer.allocUnsafe(this.declared)
    let filled = 0
    for (const c of this.chunks) filled += c.copy(whole, filled)
    this.whole = whole
    this.filled = filled
    this.chunks = []
    return true
  }

  /**
   * Sends `answer` once the rest of the body has been read and discarded.
   * When the declared rest is already past the bound, at once (see cut()).
   */
  answerAfterBody (answer: Answer): void {
    this.stopReading()
    this.answer = answer
    if (this.slow) {
      this.cut('slow')
      return
    }
    const remaining = this.declared === undefined ? 0 : this.declared - this.received
    if (remaining > this.host.drainMaxBytes || this.drainedBytes > this.host.drainMaxBytes) {
      this.cut('size')
      return
    }
    this.exchange.resume()
    this.timer = setTimeout(() => { this.cut('time') }, this.host.drainTimeoutMs)
  }

  /** The request is over (answered or aborted): the body's memory goes back to the budget. */
  close (): void {
    this.done = true
    clearTimeout(this.timer)
    if (this.mode === 'collect' || this.mode === 'stream') this.mode = 'drain'
    this.release()
  }

  private data (chunk: ArrayBuffer, isLast: boolean): void {
    this.received += chunk.byteLength
    if (isLast) this.complete = true
    if (this.mode === 'collect') this.collect(chunk, isLast)
    else if (this.mode === 'stream' && this.stream!.errored === undefined) this.stream!.feed(chunk, isLast)
    else this.discard(chunk.byteLength, isLast)
  }

  private collect (chunk: ArrayBuffer, isLast: boolean): void {
    if (this.received > this.limit) {
      this.host.refused(this, payloadTooLarge(this.limit))
      return
    }
    if (this.received > this.reserved) {
      if (!this.budget.take(this.received - this.reserved)) {
        this.overflow()
        return
      }
      this.reserved = this.received
    }
    if (this.whole !== undefined) {
      this.whole.set(new Uint8Array(chunk), this.filled)
      this.filled += chunk.byteLength
    } else if (chunk.byteLength > 0) this.chunks.push(copyChunk(chunk))
    if (!this.authorized) {
      // Until the route's check passes, read no further than what already arrived with the headers.
      if (!isLast) this.exchange.pause()
    } else if (isLast) this.host.collected(this)
  }

  private overflow (): void {
    this.overloaded = true
    this.stopReading()
    if (this.authorized) this.host.refused(this, bodiesOverloaded())
    else this.exchange.pause()
  }

  private discard (bytes: number, isLast: boolean): void {
    if (bytes > 0) {
      this.drainedBytes += bytes
      this.host.drained(bytes)
    }
    if (this.mode === 'cut' || this.answer === undefined) return
    if (isLast) {
      clearTimeout(this.timer)
      const a = this.answer
      this.exchange.send(a.status, a.body, a.headers, a.close)
    } else if (this.drainedBytes > this.host.drainMaxBytes) this.cut('size')
  }

  /**
   * Answers now and reads no more. Not with uWS's end(…, closeConnection),
   * which closes with the rest of the body unread (the reset above): the
   * socket is paused instead, the answer says `Connection: close`, and uWS
   * closes the socket at its idle timeout (about 10 s). A client that reads
   * while it sends (fetch, curl) has the answer long before; one that only
   * reads after sending all of it may not.
   *
   * A body cut for being slow is the exception: its client sends (nearly)
   * nothing, so there is (nearly) nothing unread to draw a reset, and
   * waiting for the idle timeout would hold its connection open for up to
   * 30 s more (20.57) after the answer: it is closed with the answer.
   */
  private cut (reason: CutReason): void {
    clearTimeout(this.timer)
    this.mode = 'cut'
    this.host.cutShort(reason)
    const a = this.answer!
    if (reason === 'slow') {
      this.exchange.send(a.status, a.body, a.headers, true)
      return
    }
    this.exchange.pause()
    this.exchange.send(a.status, a.body, { ...a.headers, connection: 'close' })
  }

  private stopReading (): void {
    if (this.mode === 'drain' || this.mode === 'cut') return
    this.mode = 'drain'
    this.release()
    this.stream?.destroy(new BodyDiscardedError())
  }

  private release (): void {
    this.chunks = []
    this.whole = undefined
    if (this.reserved > 0) {
      this.budget.give(this.reserved)
      this.reserved = 0
    }
  }
}

/** 408 for a body sent slower than the minimum rate. */
export function tooSlow (minBytesPerS: number): GatewayError {
  return new GatewayError('request_timeout', `the request body came slower than ${minBytesPerS} bytes a second over ${RATE_WINDOW_TICKS} s`)
}

/** 503 for a body the budget cannot hold. */
export function bodiesOverloaded (): GatewayError {
  return new GatewayError('overloaded', 'too many request bodies in memory; retry shortly', { headers: { 'retry-after': '1' } })
}
