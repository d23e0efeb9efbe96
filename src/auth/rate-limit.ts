import { isIPv4, isIPv6 } from 'node:net'
import { CLEAN, KNOWN, SUSPECT, type Lane } from './scrypt-pool.js'

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

  /** Failures of `key` in its current window. */
  count (key: string): number {
    const w = this.windows.get(key)
    return w === undefined || w.resetAt <= this.now() ? 0 : w.count
  }

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
  /** Failures from one network (IPv4 /24, IPv6 /64), whatever the address (AUTH_PREFIX_MAX_FAILURES). */
  perPrefix: number
  windowMs: number
  /** How long a success makes its (client_id, network) known: its logins go first. */
  knownMs?: number
  now?: () => number
}

const DAY_MS = 24 * 3600 * 1000
const KNOWN_MAX = 100_000

/**
 * Failed logins, counted three times: per (client_id, address), so a device
 * with a wrong secret locks only itself and an outsider elsewhere cannot
 * lock a client out; per address, with a higher threshold, so one address
 * cannot spray guesses over many client_ids; and per network (IPv4 /24,
 * IPv6 /64), higher still, since one host holds a whole /64 and rotating
 * addresses inside it costs nothing. A success clears only its own
 * (client_id, address) count: the others would otherwise be reset by an
 * attacker's own valid login between guesses.
 *
 * It also says which lane a login's hash waits in (ScryptPool): a client
 * that logged in from this network within `knownMs` first; then a network
 * without a failure in the window; then the rest. Failing guesses, from
 * however many addresses, thus queue behind every login that has not failed.
 */
export class LoginThrottle {
  private readonly pairs: FailureLimiter
  private readonly addresses: FailureLimiter
  private readonly prefixes: FailureLimiter
  /** (client_id, network) → until when it is known; oldest first. */
  private readonly known = new Map<string, number>()
  private readonly knownMs: number
  private readonly now: () => number

  constructor (options: LoginThrottleOptions) {
    this.pairs = new FailureLimiter(options.perClient, options.windowMs, undefined, options.now)
    this.addresses = new FailureLimiter(options.perAddress, options.windowMs, undefined, options.now)
    this.prefixes = new FailureLimiter(options.perPrefix, options.windowMs, undefined, options.now)
    this.knownMs = options.knownMs ?? DAY_MS
    this.now = options.now ?? (() => performance.now())
  }

  /** Seconds until this client may try again from this address, or 0. `clientId` undefined: no valid client_id was given. */
  retryAfter (clientId: string | undefined, address: string): number {
    const pair = clientId === undefined ? 0 : this.pairs.retryAfter(pairKey(clientId, address))
    return Math.max(pair, this.addresses.retryAfter(address), this.prefixes.retryAfter(networkPrefix(address)))
  }

  /** The lane this login's hash waits in. */
  lane (clientId: string, address: string): Lane {
    const prefix = networkPrefix(address)
    const key = pairKey(clientId, prefix)
    const until = this.known.get(key)
    if (until !== undefined) {
      if (until > this.now()) return KNOWN
      this.known.delete(key)
    }
    return this.addresses.count(address) > 0 || this.prefixes.count(prefix) > 0 ? SUSPECT : CLEAN
  }

  failed (clientId: string | undefined, address: string): void {
    if (clientId !== undefined) this.pairs.fail(pairKey(clientId, address))
    this.addresses.fail(address)
    this.prefixes.fail(networkPrefix(address))
  }

  succeeded (clientId: string, address: string): void {
    this.pairs.reset(pairKey(clientId, address))
    const key = pairKey(clientId, networkPrefix(address))
    this.known.delete(key)
    if (this.known.size >= KNOWN_MAX) this.known.delete(this.known.keys().next().value!)
    this.known.set(key, this.now() + this.knownMs)
  }
}

/**
 * The network an address belongs to, as one key: an IPv4 /24 (an IPv4-mapped
 * IPv6 address counts as its IPv4 address), an IPv6 /64; `wide`, the block
 * around it: an IPv4 /16, an IPv6 /48 (a site's usual allocation). Anything
 * else (a header value that is no address) is its own network.
 */
export function networkPrefix (address: string, wide = false): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  const v4 = mapped?.[1] ?? address
  if (isIPv4(v4)) return wide ? `${v4.split('.').slice(0, 2).join('.')}.0.0/16` : `${v4.slice(0, v4.lastIndexOf('.'))}.0/24`
  const bare = address.replace(/%.*$/, '')
  if (!isIPv6(bare)) return address
  const [head, tail] = bare.includes('::') ? bare.split('::') as [string, string] : [bare, undefined]
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  // An embedded IPv4 tail takes two groups; it is past the first four either way.
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
  const kept = wide ? 3 : 4
  return `${groups.slice(0, kept).map(g => parseInt(g, 16).toString(16)).join(':')}::/${kept * 16}`
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
