import { GatewayError } from '../errors.js'
import { hashSecret, verifySecret } from './secrets.js'

export interface ScryptPoolOptions {
  /** scrypt calls that may run at once, each on a thread of libuv's pool. */
  threads: number
  /** Checks that may wait for a thread; one more is answered 503 `overloaded`. */
  queue: number
}

/**
 * scrypt on at most `threads` of libuv's thread pool at a time. That pool
 * (UV_THREADPOOL_SIZE, four threads) also runs lmdb commits and file writes:
 * 200 concurrent logins once held every thread of it for seconds, and
 * telemetry answered 500 while its bus writes waited behind them. Bounded
 * here, a burst of logins waits for its own slots and the other threads stay
 * free (config/load.ts refuses `threads` that would take the whole pool);
 * past `queue` waiting checks the next login is told to come back rather than
 * queued without bound.
 *
 * A worker thread of our own did the same job before, at a price: about
 * 6 MiB of RSS while it lived, a login about 80 ms slower when it had to
 * start one, and every start set V8's heap flags back to node's (ops/gc.ts).
 */
export class ScryptPool {
  private running = 0
  private readonly waiting: Array<() => void> = []

  constructor (private readonly options: ScryptPoolOptions) {}

  /** A new hash (start-up only: not bounded by `queue`). */
  async hash (secret: string): Promise<string> {
    return this.slot(() => hashSecret(secret))
  }

  /** Checks `secret` against a stored hash, or throws 503 `overloaded` when too many wait. */
  async verify (stored: string, secret: string): Promise<boolean> {
    if (this.running >= this.options.threads && this.waiting.length >= this.options.queue) {
      throw new GatewayError('overloaded', 'too many logins in progress; retry shortly', { headers: { 'retry-after': '1' } })
    }
    return this.slot(() => verifySecret(stored, secret))
  }

  /** Nothing to release: a check in progress finishes on libuv's thread. */
  async close (): Promise<void> {}

  private async slot<T> (work: () => Promise<T>): Promise<T> {
    if (this.running >= this.options.threads) await new Promise<void>(resolve => this.waiting.push(resolve))
    else this.running++
    try {
      return await work()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.running--
    }
  }
}
