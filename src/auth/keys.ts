import { createPrivateKey, createPublicKey, generateKeyPair, type JsonWebKey, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { calculateJwkThumbprint, errors as joseErrors, type JWK, type JWTVerifyGetKey } from 'jose'
import { expiredKeys, rotationDue, signingKey, type KeySchedule } from './key-schedule.js'
import type { KeyListing, KeyVault, ListedKey, StoredKey } from './key-vault.js'
import type { KeyWrap } from './key-wrap.js'

const generateRsa = promisify(generateKeyPair)

export interface SigningKey {
  readonly kid: string
  readonly privateKey: KeyObject
}

export interface KeyStoreOptions {
  tokenTtlS: number
  rotationS: number
  /** AUTH_KEY_PUBLISH_LEAD_S: how long a new key is published before it signs. */
  publishLeadS: number
  signingKeyFile?: string | undefined
  /** AUTH_KEY_WRAP_FILE's key: the keys this store makes are stored wrapped, and wrapped keys are read with it. */
  wrap?: KeyWrap | undefined
}

/**
 * How long a retired key stays published past the last expiry of its
 * tokens: the leeway verifiers allow past `exp` (30 s), the few seconds a
 * process may take to see that its successor signs, the one-second
 * resolution of the store's clock, and room to spare.
 */
const RETAIN_MARGIN_MS = 5 * 60 * 1000
/**
 * Least time between two looks at the vault for an unknown kid: a stream of
 * tokens with made-up kids costs one look a second, not one per request.
 */
export const UNKNOWN_KID_REFRESH_MS = 1_000

/**
 * RS256 signing keys, kept in a KeyVault that every process of the service
 * shares (LMDB on one node, S3 in a cluster), on the schedule of
 * `key-schedule.ts`: a new key is published AUTH_KEY_PUBLISH_LEAD_S before
 * it signs, and leaves once every token it signed has expired. Every
 * decision is taken on the vault's clock (S3's in a cluster), which `now`
 * carries forward between readings: a node whose clock is minutes off
 * neither rotates early nor removes a key another node signs with, and the
 * tokens it issues and checks are timed on the same clock as everyone's.
 * `rotateIfDue`, called every few seconds, also picks up keys other
 * processes made; a token with a kid not seen yet makes it look at once.
 * With AUTH_SIGNING_KEY_FILE the operator owns the key and its rotation.
 */
export class KeyStore {
  private signing: SigningKey | undefined
  private keys: ListedKey[] = []
  private publicKeys = new Map<string, KeyObject>()
  private jwksBody = '{"keys":[]}'
  private refreshing: Promise<void> | undefined
  private lastRefresh = -Infinity
  private readonly schedule: KeySchedule
  /** The vault's clock at the last listing, and this process's monotonic clock then. */
  private clock = { at: Date.now(), monotonic: performance.now() }

  constructor (private readonly vault: KeyVault, private readonly options: KeyStoreOptions) {
    this.schedule = { leadMs: options.publishLeadS * 1000, rotationMs: options.rotationS * 1000, retainMs: options.tokenTtlS * 1000 + RETAIN_MARGIN_MS }
  }

  /**
   * Epoch ms on the vault's clock, carried forward from the last listing on
   * a clock that never steps: the time tokens are issued and checked at.
   */
  readonly now = (): number => this.clock.at + performance.now() - this.clock.monotonic

  async init (): Promise<void> {
    if (this.options.signingKeyFile) {
      const privateKey = createPrivateKey(readFileSync(this.options.signingKeyFile, 'utf8'))
      const jwk = publicJwk(privateKey)
      const kid = await calculateJwkThumbprint(jwk)
      this.signing = { kid, privateKey }
      this.publish([{ kid, created_at: 0, private_pem: '', public_jwk: { ...jwk, kid } }])
      return
    }
    await this.rotateIfDue()
    // A key this process cannot open (wrapped by another AUTH_KEY_WRAP_FILE, or with none) fails the start, not the first login.
    void this.current
  }

  /** The key that signs now; a published key takes over once its lead has passed, read again or not. */
  get current (): SigningKey {
    const due = signingKey(this.keys, this.now(), this.schedule.leadMs)
    if (due !== undefined && due.kid !== this.signing?.kid) this.signing = { kid: due.kid, privateKey: createPrivateKey(this.privatePem(due)) }
    if (!this.signing) throw new Error('KeyStore.init() was not awaited')
    return this.signing
  }

  /** The JWKS document, serialised once per change. */
  get jwks (): string {
    return this.jwksBody
  }

  /** jose's key lookup for tokens this service issued: by kid, or `JWKSNoMatchingKey`. */
  readonly getKey: JWTVerifyGetKey = async header => {
    const key = header.kid === undefined ? undefined : await this.publicKey(header.kid)
    if (!key) throw new joseErrors.JWKSNoMatchingKey()
    return key
  }

  /** Looks in the vault again on a miss (rate-limited): another process may have rotated. */
  async publicKey (kid: string): Promise<KeyObject | undefined> {
    if (!this.publicKeys.has(kid) && !this.options.signingKeyFile) await this.refresh()
    return this.publicKeys.get(kid)
  }

  /**
   * Reads the vault, adds the next epoch's key when there is none, the
   * newest is AUTH_KEY_ROTATION_S old, or `force`, and removes the expired
   * ones. Of processes that add a key at once, the vault keeps the first of
   * the epoch and all adopt it; all remove the same keys.
   */
  async rotateIfDue (force = false): Promise<void> {
    if (this.options.signingKeyFile) return
    let listing = await this.read()
    if (force || rotationDue(listing.keys, listing.now, this.schedule)) {
      const { privateKey } = await generateRsa('rsa', { modulusLength: 2048 })
      const jwk = publicJwk(privateKey)
      const kid = await calculateJwkThumbprint(jwk)
      const epoch = (listing.keys.at(-1)?.epoch ?? 0) + 1
      const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
      const wrap = this.options.wrap
      const secret = wrap === undefined ? { private_pem: pem } : { private_pem: '', private_wrapped: wrap.wrap(pem, kid) }
      await this.vault.create({ kid, epoch, created_at: listing.now, ...secret, public_jwk: { ...jwk, kid } })
      listing = await this.read()
    }
    const expired = expiredKeys(listing.keys, listing.now, this.schedule)
    for (const key of expired) await this.vault.remove(key)
    this.adopt(listing.keys.filter(k => !expired.includes(k)))
  }

  /**
   * One look at the vault at a time, and at most one per
   * UNKNOWN_KID_REFRESH_MS, timed on a clock that never steps: on the wall
   * clock, one set back an hour kept another process's new key unknown, and
   * its tokens refused, for that hour.
   */
  private async refresh (): Promise<void> {
    if (this.refreshing === undefined && performance.now() - this.lastRefresh >= UNKNOWN_KID_REFRESH_MS) {
      this.lastRefresh = performance.now()
      this.refreshing = this.read().then(listing => this.adopt(listing.keys)).finally(() => { this.refreshing = undefined })
    }
    await this.refreshing?.catch(() => undefined)
  }

  private privatePem (key: StoredKey): string {
    if (key.private_wrapped === undefined) return key.private_pem
    if (this.options.wrap === undefined) throw new Error(`signing key ${key.kid} is wrapped: AUTH_KEY_WRAP_FILE is needed to sign with it`)
    return this.options.wrap.unwrap(key.private_wrapped, key.kid)
  }

  /** Lists the vault and sets the clock by its answer. */
  private async read (): Promise<KeyListing> {
    const listing = await this.vault.list()
    this.clock = { at: listing.now, monotonic: performance.now() }
    return listing
  }

  private adopt (keys: ListedKey[]): void {
    this.keys = keys
    this.publish(keys)
  }

  private publish (keys: StoredKey[]): void {
    this.publicKeys = new Map(keys.map(k => [k.kid, createPublicKey({ key: k.public_jwk as JsonWebKey, format: 'jwk' })]))
    this.jwksBody = JSON.stringify({ keys: keys.map(k => ({ ...k.public_jwk, alg: 'RS256', use: 'sig' })) })
  }
}

function publicJwk (privateKey: KeyObject): JWK {
  const { kty, n, e } = createPublicKey(privateKey).export({ format: 'jwk' })
  return { kty: kty!, n: n!, e: e! }
}
