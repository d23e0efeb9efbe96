import { randomUUID } from 'node:crypto'
import { SignJWT, createRemoteJWKSet, decodeJwt, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import { GatewayError, unauthorized } from '../errors.js'
import { isStorageId, STORAGE_ID_RULE } from '../validation/index.js'
import type { Client } from './clients.js'
import { bearerToken, TOKEN_LEEWAY_S, verifyJwt } from './jwt.js'
import type { KeyStore } from './keys.js'
import { credentialGeneration, GENERATION_CLAIM, type Revocation } from './revocation.js'
import { tenantKey } from './tenant.js'

export interface IssuedToken {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  scope: string
}

/** A verified token's payload, with the claims ingest relies on checked and defaulted. */
export interface TokenClaims extends JWTPayload {
  iss: string
  /** A storage identifier (docs/identifiers.md); `sub` when the token has no client_id. */
  client_id: string
  scope: string
  /** A storage identifier; the client_id when the token has none. */
  tenant: string
  /**
   * Not a claim: the verifier's `tenantKey(client_id, iss)`, the namespace of
   * this principal's objects and idempotency keys.
   */
  tenantKey: string
}

export async function issueToken (keys: KeyStore, client: Client, audience: string, issuer: string, ttlS: number): Promise<IssuedToken> {
  const { kid, privateKey } = keys.current
  const scope = client.scopes.join(' ')
  // On the key store's clock, the cluster's (S3's), as the ingest check is: not this machine's.
  const iat = Math.floor(keys.now() / 1000)
  const accessToken = await new SignJWT({ client_id: client.client_id, scope, tenant: client.tenant, [GENERATION_CLAIM]: credentialGeneration(client) })
    .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setSubject(client.client_id)
    .setAudience(audience)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttlS)
    .setJti(randomUUID())
    .sign(privateKey)
  return { access_token: accessToken, token_type: 'Bearer', expires_in: ttlS, scope }
}

export interface VerifierOptions {
  issuer: string
  audiences: readonly string[]
  /** A second accepted issuer with its remote key set (IDP_ISSUER / IDP_JWKS_URL). */
  external?: { issuer: string, jwksUrl: string } | undefined
  /** Verified tokens remembered; each entry still expires with its token. */
  cacheSize?: number
  /** The key store's clock (the cluster's) by default, the one tokens are issued on. */
  now?: () => number
  /** Refuses this service's tokens of a client removed or rotated since (revocation.ts). */
  revocation?: Revocation | undefined
}

/** Characters of an Authorization header that key its cache entry: a signature's last ones, effectively random. */
const CACHE_KEY_CHARS = 32

interface Verified { header: string, claims: TokenClaims, scopes: ReadonlySet<string> }

/**
 * Checks bearer tokens on the ingest routes: signature, issuer, audience,
 * expiry (TOKEN_LEEWAY_S either way on exp, nbf and iat, as every token check
 * here), then the route's scope. Verified tokens are cached by their exact
 * Authorization header until they expire, since a device sends the same
 * token thousands of times and RS256 verification would otherwise dominate a
 * small request. The cache is keyed by the header's last characters and the
 * entry holds the whole header: a lookup hashes 32 characters and compares
 * the rest, where keying by the whole ~900-character header hashed all of it
 * on every request (1.4 µs, against 0.25). Two headers with one key are
 * told apart by the comparison: the later verified one takes the place. Only
 * a verified token is stored, so nobody can evict another's entry with
 * tokens they cannot sign.
 */
export class TokenVerifier {
  private readonly ownKeys: JWTVerifyGetKey
  private readonly externalKeys: JWTVerifyGetKey | undefined
  private readonly cache = new Map<string, Verified>()
  private readonly cacheSize: number
  private readonly now: () => number

  constructor (keys: KeyStore, private readonly options: VerifierOptions) {
    this.ownKeys = keys.getKey
    this.externalKeys = options.external ? createRemoteJWKSet(new URL(options.external.jwksUrl), { cooldownDuration: 30_000 }) : undefined
    this.cacheSize = options.cacheSize ?? 10_000
    this.now = options.now ?? keys.now
  }

  /**
   * The claims, or throws 401 (no/invalid/expired token) or 403 (scope
   * missing). A cached token is answered synchronously (no promise per
   * request); only a signature check is asynchronous.
   */
  verify (authorization: string | undefined, scope: string): TokenClaims | Promise<TokenClaims> {
    const key = authorization?.slice(-CACHE_KEY_CHARS)
    const entry = key === undefined ? undefined : this.cache.get(key)
    if (entry !== undefined && entry.header === authorization) {
      if (((entry.claims.exp ?? 0) + TOKEN_LEEWAY_S) * 1000 > this.now()) return this.current(this.granted(entry, scope))
      this.cache.delete(key!)
    }
    const token = bearerToken(authorization)
    return this.verifySignature(token).then(claims => {
      const fresh = { header: authorization!, claims, scopes: new Set(claims.scope.split(' ')) }
      if (!this.cache.has(key!) && this.cache.size >= this.cacheSize) this.cache.delete(this.cache.keys().next().value!)
      this.cache.set(key!, fresh)
      return this.current(this.granted(fresh, scope))
    })
  }

  /**
   * The claims while their client still holds the credential they were
   * issued for; checked on every use, cached or not, so a revoked token is
   * refused even if it was verified (and cached) before.
   */
  current (claims: TokenClaims): TokenClaims | Promise<TokenClaims> {
    if (this.options.revocation === undefined || !this.isOwn(claims.iss)) return claims
    const checked = this.options.revocation.check(claims)
    return checked instanceof Promise ? checked.then(() => claims) : claims
  }

  /** Issued by this service (or a node of its cluster), not by the external issuer. */
  private isOwn (iss: string): boolean {
    const external = this.options.external
    return iss === this.options.issuer || external === undefined || iss !== external.issuer
  }

  private granted (entry: Verified, scope: string): TokenClaims {
    if (!entry.scopes.has(scope)) {
      throw new GatewayError('forbidden', `token lacks scope ${scope}`, { details: { authorization: `scope ${scope} required` } })
    }
    return entry.claims
  }

  private async verifySignature (token: string): Promise<TokenClaims> {
    let issuer: unknown
    try {
      issuer = decodeJwt(token).iss
    } catch {
      throw unauthorized('auth_failed:malformed')
    }
    const external = this.options.external
    // IDP_ISSUER may name this service itself (so the harness accepts its
    // tokens): those are verified with the keys at hand, in its own namespace.
    const useExternal = external !== undefined && issuer === external.issuer && issuer !== this.options.issuer
    const payload = await verifyJwt(token, useExternal ? this.externalKeys! : this.ownKeys, {
      algorithms: ['RS256'],
      issuer: useExternal ? external.issuer : this.options.issuer,
      audience: this.options.audiences,
      leewayS: TOKEN_LEEWAY_S,
      now: this.now()
    })
    const clientId = typeof payload['client_id'] === 'string' ? payload['client_id'] : payload.sub
    if (typeof clientId !== 'string' || clientId === '') throw unauthorized('auth_failed:malformed')
    const tenant = typeof payload['tenant'] === 'string' ? payload['tenant'] : clientId
    // An authentic token whose identity cannot name a storage prefix: logging
    // in again gives the same token, so this is 403 (do not retry), not 401.
    for (const [claim, value] of [['client_id', clientId], ['tenant', tenant]] as const) {
      if (!isStorageId(value)) throw new GatewayError('forbidden', `the token's ${claim} is not a valid identifier`, { details: { authorization: `${claim} claim ${STORAGE_ID_RULE} (docs/identifiers.md)` } })
    }
    const scope = typeof payload['scope'] === 'string' ? payload['scope'] : ''
    const iss = payload.iss!
    return { ...payload, iss, client_id: clientId, tenant, scope, tenantKey: tenantKey(clientId, iss, this.options.issuer) }
  }
}
