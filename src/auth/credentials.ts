import { createHmac, randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { Client, ClientRegistry } from './clients.js'
import { CLEAN, ScryptPool, type Lane } from './scrypt-pool.js'

/** One hash that concurrent checks of the same pair share; abandoned when every one of them left. */
interface Shared { readonly result: Promise<boolean>, waiting: number, readonly left: AbortController }

async function waitFor (run: Shared, signal: AbortSignal | undefined): Promise<boolean> {
  run.waiting++
  const leave = (): void => { if (--run.waiting === 0) run.left.abort() }
  if (signal?.aborted === true) leave()
  else signal?.addEventListener('abort', leave, { once: true })
  try {
    return await run.result
  } finally {
    if (signal?.aborted !== true) {
      signal?.removeEventListener('abort', leave)
      run.waiting--
    }
  }
}

/** What Credentials needs of ScryptPool. */
export type SecretHasher = Pick<ScryptPool, 'hash' | 'verify' | 'close'>

export interface CredentialsOptions {
  threads: number
  queue: number
  /** Instead of a ScryptPool of `threads` and `queue` (tests count its calls). */
  hasher?: SecretHasher
  /** How long a verified (secret, stored hash) pair is believed without scrypt; 0 turns that off. */
  cacheTtlMs: number
  cacheSize?: number
  now?: () => number
}

/**
 * Checks client secrets. scrypt runs in a pool of its own (ScryptPool), and
 * a secret that verified is remembered for a few minutes, keyed by the
 * client's stored hash and an HMAC of the secret under a key that lives only
 * in this process: a fleet logging in again after a restart costs one hash
 * per client, not one per device, and a rotated secret (a new stored hash)
 * misses by construction. Concurrent checks of the same pair share one hash.
 * A miss always costs a full hash, so nothing here tells a guess that is
 * close from one that is not.
 */
export class Credentials {
  private readonly pool: SecretHasher
  private readonly hmacKey = randomBytes(32)
  private readonly verified = new Map<string, number>()
  private readonly running = new Map<string, Shared>()
  private readonly cacheSize: number
  private readonly now: () => number
  /**
   * Hash checked when the client_id is unknown, so a miss costs what a hit
   * costs. Of a random secret: one anybody could send would be cached on
   * success, and a fast answer would tell an unknown client_id from a known one.
   */
  private decoy = ''

  constructor (private readonly clients: ClientRegistry, private readonly options: CredentialsOptions) {
    this.pool = options.hasher ?? new ScryptPool({ threads: options.threads, queue: options.queue })
    this.cacheSize = options.cacheSize ?? 10_000
    // A TTL is a duration, so a clock that steps neither stretches nor cuts it.
    this.now = options.now ?? (() => performance.now())
  }

  async start (clientsFile: string | undefined, log: Logger): Promise<void> {
    this.decoy = await this.pool.hash(randomBytes(32).toString('base64url'))
    await this.clients.load(clientsFile, log, secret => this.pool.hash(secret))
  }

  async close (): Promise<void> {
    await this.pool.close()
  }

  /**
   * The client when the secret matches, else undefined; throws 503
   * `overloaded` when hashing is saturated for `lane`. `signal`: the client
   * left; a check still waiting for a thread is then never hashed.
   */
  async authenticate (clientId: string, secret: string, lane: Lane = CLEAN, signal?: AbortSignal): Promise<Client | undefined> {
    const client = await this.clients.get(clientId)
    const ok = await this.check(client?.client_secret_hash ?? this.decoy, secret, lane, signal)
    return ok && client ? client : undefined
  }

  private async check (stored: string, secret: string, lane: Lane, signal: AbortSignal | undefined): Promise<boolean> {
    const key = `${stored}\u0000${createHmac('sha256', this.hmacKey).update(secret).digest('base64url')}`
    const until = this.verified.get(key)
    if (until !== undefined) {
      if (until > this.now()) return true
      this.verified.delete(key)
    }
    let run = this.running.get(key)
    if (run === undefined) {
      const left = new AbortController()
      const shared: Shared = { result: this.pool.verify(stored, secret, lane, left.signal).finally(() => this.running.delete(key)), waiting: 0, left }
      run = shared
      this.running.set(key, run)
    }
    const ok = await waitFor(run, signal)
    if (ok && this.options.cacheTtlMs > 0) this.remember(key)
    return ok
  }

  private remember (key: string): void {
    if (this.verified.size >= this.cacheSize && !this.verified.has(key)) this.verified.delete(this.verified.keys().next().value!)
    this.verified.set(key, this.now() + this.options.cacheTtlMs)
  }
}
