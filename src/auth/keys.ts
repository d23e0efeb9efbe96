import { createPrivateKey, createPublicKey, generateKeyPair, type JsonWebKey, type KeyObject } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { calculateJwkThumbprint, errors as joseErrors, type JWK, type JWTVerifyGetKey } from 'jose'
import type { Database } from 'lmdb'
import type { StateStore } from '../state/index.js'

const generateRsa = promisify(generateKeyPair)

interface StoredKey {
  kid: string
  created_at: number
  /** When a newer key took over; the key stays published until its tokens expired. */
  retired_at?: number
  private_pem: string
  public_jwk: JWK
}

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
 * RS256 signing keys in LMDB. The newest key signs; older keys stay in the
 * published set until every token they signed has expired, then are dropped.
 * With AUTH_SIGNING_KEY_FILE the operator owns the key and its rotation.
 */
export class KeyStore {
  private readonly db: Database<StoredKey, string>
  private readonly now: () => number
  private signing: SigningKey | undefined
  private publicKeys = new Map<string, KeyObject>()
  private jwksBody = '{"keys":[]}'

  constructor (state: StateStore, private readonly options: KeyStoreOptions) {
    this.db = state.openDB<StoredKey, string>({ name: 'auth-keys' })
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
    const key = header.kid === undefined ? undefined : this.publicKey(header.kid)
    if (!key) throw new joseErrors.JWKSNoMatchingKey()
    return key
  }

  /** Looks the kid up again in LMDB on a miss: another process may have rotated. */
  publicKey (kid: string): KeyObject | undefined {
    if (!this.publicKeys.has(kid) && !this.options.signingKeyFile) this.load()
    return this.publicKeys.get(kid)
  }

  /** Creates a new signing key when none exists, the newest is older than the rotation age, or `force`. */
  async rotateIfDue (force = false): Promise<void> {
    const now = this.now()
    const newest = this.stored().at(-1)
    if (force || !newest || now - newest.created_at >= this.options.rotationS * 1000) {
      const { privateKey } = await generateRsa('rsa', { modulusLength: 2048 })
      const jwk = publicJwk(privateKey)
      const kid = await calculateJwkThumbprint(jwk)
      await this.db.transaction(() => {
        for (const k of this.stored()) if (k.retired_at === undefined) this.db.put(k.kid, { ...k, retired_at: now })
        this.db.put(kid, { kid, created_at: now, private_pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), public_jwk: { ...jwk, kid } })
      })
    }
    await this.prune()
    this.load()
  }

  private async prune (): Promise<void> {
    const cutoff = this.now() - this.options.tokenTtlS * 1000 - PUBLISH_MARGIN_MS
    for (const k of this.stored()) {
      if (k.retired_at !== undefined && k.retired_at < cutoff) await this.db.remove(k.kid)
    }
  }

  private stored (): StoredKey[] {
    return [...this.db.getRange()].map(e => e.value).sort((a, b) => a.created_at - b.created_at)
  }

  private load (): void {
    const keys = this.stored()
    const newest = keys.at(-1)
    if (newest) this.signing = { kid: newest.kid, privateKey: createPrivateKey(newest.private_pem) }
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
