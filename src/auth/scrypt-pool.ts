import { GatewayError } from '../errors.js'
import { hashSecret, verifySecret } from './secrets.js'

export interface ScryptPoolOptions {
  /** scrypt calls that may run at once, each on a thread of libuv's pool. */
  threads: number
  /** Checks that may wait for a thread, in each lane; one more than all lanes it may use hold is answered 503 `overloaded`. */
  queue: number
}

/**
 * Who waits for a hash, first served first: `KNOWN`, a client that logged in
 * from this network lately; `CLEAN`, a login from a network with no recent
 * failure; `SUSPECT`, the rest. A check waits in its own lane, or a later
 * one when its own is full, so failures (which land in `SUSPECT` once their
 * network has failed once) can never hold the places of the other two.
 */
export const KNOWN = 0
export const CLEAN = 1
export const SUSPECT = 2
export type Lane = typeof KNOWN | typeof CLEAN | typeof SUSPECT

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
  private readonly lanes: Array<Array<() => void>> = [[], [], []]

  constructor (private readonly options: ScryptPoolOptions) {}

  /** A new hash (start-up only: not bounded by `queue`). */
  async hash (secret: string): Promise<string> {
    return this.slot(this.lanes[KNOWN]!, () => hashSecret(secret))
  }

  /**
   * Checks `secret` against a stored hash, or throws 503 `overloaded` when
   * its lane and those after it are full. Abandoned before its turn, it is
   * not hashed, and rejects (to no one).
   */
  async verify (stored: string, secret: string, lane: Lane = CLEAN, abandoned?: AbortSignal): Promise<boolean> {
    let queue = this.lanes[lane]!
    if (this.running >= this.options.threads) {
      let l = lane
      while (l < this.lanes.length && this.lanes[l]!.length >= this.options.queue) l++
      if (l === this.lanes.length) throw new GatewayError('overloaded', 'too many logins in progress; retry shortly', { headers: { 'retry-after': '1' } })
      queue = this.lanes[l]!
    }
    return this.slot(queue, () => {
      // Nobody waits for this answer any more: a client that gave up costs no hash (and no failure is counted).
      if (abandoned?.aborted === true) return Promise.reject(new Error('the login was abandoned before its hash'))
      return verifySecret(stored, secret)
    })
  }

  /** Checks waiting, by lane. */
  get waiting (): number[] {
    return this.lanes.map(l => l.length)
  }

  /** Nothing to release: a check in progress finishes on libuv's thread. */
  async close (): Promise<void> {}

  private async slot<T> (queue: Array<() => void>, work: () => Promise<T>): Promise<T> {
    if (this.running >= this.options.threads) await new Promise<void>(resolve => queue.push(resolve))
    else this.running++
    try {
      return await work()
    } finally {
      const next = this.lanes.find(l => l.length > 0)?.shift()
      if (next) next()
      else this.running--
    }
  }
}
