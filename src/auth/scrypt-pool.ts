import { Piscina } from 'piscina'
import { GatewayError } from '../errors.js'
import type { ScryptTask } from './scrypt-worker.js'

export interface ScryptPoolOptions {
  threads: number
  /** Checks that may wait for a thread; one more is answered 503 `overloaded`. */
  queue: number
}

/**
 * scrypt on threads of its own. On libuv's pool (four threads, shared with
 * lmdb commits and file writes) 200 concurrent logins held every thread for
 * seconds and telemetry answered 500 while its bus writes waited behind them.
 * Here a burst of logins waits for these threads alone, and past `queue`
 * waiting checks the next login is told to come back rather than queued
 * without bound.
 */
export class ScryptPool {
  private readonly pool: Piscina
  private pending = 0

  constructor (private readonly options: ScryptPoolOptions) {
    const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
    this.pool = new Piscina({
      filename: new URL(`./scrypt-worker${ext}`, import.meta.url).href,
      minThreads: 0,
      maxThreads: options.threads,
      // Logins come in bursts; an idle worker gives its thread and heap back.
      idleTimeout: 30_000,
      // scrypt's working memory is off-heap; the worker's own heap stays tiny.
      resourceLimits: { maxYoungGenerationSizeMb: 2 }
    })
  }

  /** A new hash (start-up only: not bounded by `queue`). */
  async hash (secret: string): Promise<string> {
    return this.pool.run({ op: 'hash', secret } satisfies ScryptTask) as Promise<string>
  }

  /** Checks `secret` against a stored hash, or throws 503 `overloaded` when too many wait. */
  async verify (stored: string, secret: string): Promise<boolean> {
    if (this.pending >= this.options.threads + this.options.queue) {
      throw new GatewayError('overloaded', 'too many logins in progress; retry shortly', { headers: { 'retry-after': '1' } })
    }
    this.pending++
    try {
      return await (this.pool.run({ op: 'verify', stored, secret } satisfies ScryptTask) as Promise<boolean>)
    } finally {
      this.pending--
    }
  }

  async close (): Promise<void> {
    await this.pool.destroy()
  }
}
