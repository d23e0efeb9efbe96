interface Window { count: number, resetAt: number }

/**
 * Counts failures per key in fixed windows. Bounded: when full, expired
 * windows are swept, and if none expired the oldest is dropped, so an attacker
 * rotating client_ids cannot grow memory.
 */
export class FailureLimiter {
  private readonly windows = new Map<string, Window>()

  constructor (
    private readonly maxFailures: number,
    private readonly windowMs: number,
    private readonly maxKeys = 100_000,
    // A window is a duration: on the wall clock, a step back would stretch a lockout by the step.
    private readonly now: () => number = () => performance.now()
  ) {}

  /** Seconds until `key` may try again, or 0 when it may now. */
  retryAfter (key: string): number {
    const w = this.windows.get(key)
    if (!w) return 0
    const now = this.now()
    if (w.resetAt <= now) {
      this.windows.delete(key)
      return 0
    }
    return w.count >= this.maxFailures ? Math.ceil((w.resetAt - now) / 1000) : 0
  }

  fail (key: string): void {
    const now = this.now()
    const w = this.windows.get(key)
    if (w && w.resetAt > now) {
      w.count++
      return
    }
    if (this.windows.size >= this.maxKeys) this.sweep(now)
    this.windows.set(key, { count: 1, resetAt: now + this.windowMs })
  }

  reset (key: string): void {
    this.windows.delete(key)
  }

  private sweep (now: number): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k)
    if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
  }
}

export interface LoginThrottleOptions {
  /** Failures of one client_id from one address (AUTH_MAX_FAILURES). */
  perClient: number
  /** Failures from one address, whatever the client_id (AUTH_ADDRESS_MAX_FAILURES). */
  perAddress: number
  windowMs: number
  now?: () => number
}

/**
 * Failed logins, counted twice: per (client_id, address), so a device with a
 * wrong secret locks only itself and an outsider elsewhere cannot lock a
 * client out; and per address, with a higher threshold, so one address
 * cannot spray guesses over many client_ids. A success clears only its own
 * (client_id, address) count: the address count would otherwise be reset by
 * an attacker's own valid login between guesses.
 */
export class LoginThrottle {
  private readonly pairs: FailureLimiter
  private readonly addresses: FailureLimiter

  constructor (options: LoginThrottleOptions) {
    this.pairs = new FailureLimiter(options.perClient, options.windowMs, undefined, options.now)
    this.addresses = new FailureLimiter(options.perAddress, options.windowMs, undefined, options.now)
  }

  /** Seconds until this client may try again from this address, or 0. `clientId` undefined: no valid client_id was given. */
  retryAfter (clientId: string | undefined, address: string): number {
    const pair = clientId === undefined ? 0 : this.pairs.retryAfter(pairKey(clientId, address))
    return Math.max(pair, this.addresses.retryAfter(address))
  }

  failed (clientId: string | undefined, address: string): void {
    if (clientId !== undefined) this.pairs.fail(pairKey(clientId, address))
    this.addresses.fail(address)
  }

  succeeded (clientId: string, address: string): void {
    this.pairs.reset(pairKey(clientId, address))
  }
}

const pairKey = (clientId: string, address: string): string => `${address}\u0000${clientId}`

/** Longest address kept as a key: an IPv6 text with a zone fits; a padded header does not grow the table. */
const ADDRESS_MAX = 64

/**
 * The address a login is counted against. Without a configured header, the
 * socket's peer. With AUTH_CLIENT_ADDRESS_HEADER, the last entry of that
 * header (X-Forwarded-For grows to the right, so the last entry is the one
 * the nearest proxy, the trusted one, wrote); the socket's peer when the
 * header is absent. Only safe when the proxy sets or appends the header and
 * nothing but the proxy can reach the gateway (docs/auth.md).
 */
export function clientAddress (socketAddress: string, header: string | undefined): string {
  const forwarded = header?.split(',').at(-1)?.trim()
  return forwarded ? forwarded.slice(0, ADDRESS_MAX) : socketAddress
}
