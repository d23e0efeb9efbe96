import { createPrivateKey, createPublicKey, generateKeyPair, type JsonWebKey, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { calculateJwkThumbprint, errors as joseErrors, type JWK, type JWTVerifyGetKey } from 'jose'
import type { KeyVault, StoredKey } from './key-vault.js'

const generateRsa = promisify(generateKeyPair)

export interface SigningKey {
  readonly kid: string
  readonly privateKey: KeyObject
}

export interface KeyStoreOptions {
  tokenTtlS: number
  rotationS: number
  signingKeyFile?: string | undefined
  now?: () => number
}

/** Margin past a retired key's last token expiry before it leaves the set (clock skew). */
const PUBLISH_MARGIN_MS = 5 * 60 * 1000
/**
 * Least time between two looks at the vault for an unknown kid: a stream of
 * tokens with made-up kids costs one look a second, not one per request.
 */
export const UNKNOWN_KID_REFRESH_MS = 1_000

/**
 * RS256 signing keys, kept in a KeyVault that every process of the service
 * shares (LMDB on one node, S3 in a cluster). The newest key signs; a key
 * stays in the published set until every token it signed has expired (its
 * successor's age past AUTH_TOKEN_TTL_S and a margin), then is removed.
 * `rotateIfDue`, called every few seconds, also picks up keys other
 * processes made; a token with a kid not seen yet makes it look at once.
 * With AUTH_SIGNING_KEY_FILE the operator owns the key and its rotation.
 */
export class KeyStore {
  private readonly now: () => number
  private signing: SigningKey | undefined
  private publicKeys = new Map<string, KeyObject>()
  private jwksBody = '{"keys":[]}'
  private refreshing: Promise<void> | undefined
  private lastRefresh = -Infinity

  constructor (private readonly vault: KeyVault, private readonly options: KeyStoreOptions) {
    this.now = options.now ?? Date.now
  }

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
  }

  get current (): SigningKey {
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
   * Reads the vault, and adds the next epoch's key when there is none, the
   * newest is older than the rotation age, or `force`. Of processes that do
   * this at once, the vault keeps the first key of the epoch and all adopt it.
   */
  async rotateIfDue (force = false): Promise<void> {
    if (this.options.signingKeyFile) return
    let keys = await this.vault.list()
    const newest = keys.at(-1)
    const now = this.now()
    if (force || !newest || now - newest.created_at >= this.options.rotationS * 1000) {
      const { privateKey } = await generateRsa('rsa', { modulusLength: 2048 })
      const jwk = publicJwk(privateKey)
      const kid = await calculateJwkThumbprint(jwk)
      const epoch = (newest?.epoch ?? 0) + 1
      await this.vault.create({ kid, epoch, created_at: now, private_pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), public_jwk: { ...jwk, kid } })
      keys = await this.vault.list()
    }
    this.adopt(await this.prune(keys))
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
      this.refreshing = this.vault.list().then(keys => this.adopt(keys)).finally(() => { this.refreshing = undefined })
    }
    await this.refreshing?.catch(() => undefined)
  }

  /** Removes the keys whose last token has expired; returns the rest. */
  private async prune (keys: StoredKey[]): Promise<StoredKey[]> {
    const cutoff = this.now() - this.options.tokenTtlS * 1000 - PUBLISH_MARGIN_MS
    const kept: StoredKey[] = []
    for (const [i, k] of keys.entries()) {
      const successor = keys[i + 1]
      if (successor !== undefined && successor.created_at < cutoff) await this.vault.remove(k)
      else kept.push(k)
    }
    return kept
  }

  private adopt (keys: StoredKey[]): void {
    const newest = keys.at(-1)
    if (newest && newest.kid !== this.signing?.kid) this.signing = { kid: newest.kid, privateKey: createPrivateKey(newest.private_pem) }
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
