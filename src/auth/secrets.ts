import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto'

interface Cost { N: number, r: number, p: number }

// Working memory 128·r·(N + p + 2) bytes; node's default cap (32 MiB) is just below what N = 2^15 needs.
const withMaxmem = (cost: Cost): ScryptOptions => ({ ...cost, maxmem: 128 * cost.r * (cost.N + cost.p + 2) + 65536 })

const scrypt = (secret: string, salt: Buffer, keylen: number, cost: Cost): Promise<Buffer> =>
  new Promise((resolve, reject) => scryptCb(secret, salt, keylen, withMaxmem(cost), (err, key) => err ? reject(err) : resolve(key)))

// 2^15 rather than the common 2^14: its 32 MiB of working memory is above
// glibc's cap on the size malloc serves from its heaps, so every hash maps
// its memory and returns it. 16 MiB is below: the first hash's release made
// malloc serve such sizes from its per-thread heaps, and every thread-pool
// thread that hashed afterwards (start-up, logins) kept 16 MiB for good.
const N = 32768
const R = 8
const P = 1
const KEYLEN = 32

/** A new client secret: 32 random bytes, base64url. */
export function generateSecret (): string {
  return randomBytes(32).toString('base64url')
}

/*
 * Both run on libuv's thread pool, which lmdb commits and file writes share:
 * the service calls them through ScryptPool, which bounds how many threads
 * of it they hold; the CLI is a process of its own.
 */

/** `scrypt$N$r$p$salt$hash`, the form the CLI prints and AUTH_CLIENTS_FILE takes. */
export async function hashSecret (secret: string): Promise<string> {
  const salt = randomBytes(16)
  return format(salt, await scrypt(secret, salt, KEYLEN, { N, r: R, p: P }))
}

function format (salt: Buffer, hash: Buffer): string {
  return ['scrypt', N, R, P, salt.toString('base64url'), hash.toString('base64url')].join('$')
}

export function isSecretHash (value: string): boolean {
  return parse(value) !== undefined
}

function parse (stored: string): { n: number, r: number, p: number, salt: Buffer, hash: Buffer } | undefined {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number]
  if (![n, r, p].every(Number.isInteger)) return undefined
  return { n, r, p, salt: Buffer.from(parts[4]!, 'base64url'), hash: Buffer.from(parts[5]!, 'base64url') }
}

/** Compares in constant time; the scrypt cost itself is the same for a match and a miss. */
export async function verifySecret (stored: string, secret: string): Promise<boolean> {
  const h = parse(stored)
  if (!h) return false
  const derived = await scrypt(secret, h.salt, h.hash.length, { N: h.n, r: h.r, p: h.p })
  return derived.length === h.hash.length && timingSafeEqual(derived, h.hash)
}
