import { createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, SignJWT, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import type { KeyObject } from 'node:crypto'
import { unauthorized } from '../errors.js'

export interface CallerSettings {
  /** RS256 keys for user tokens: a remote set, or this service's own keys. */
  rs256: JWTVerifyGetKey
  /** The HS256 shared secret, as bytes (encoded once, not per request). */
  hs256Secret?: Uint8Array | undefined
}

export interface Caller {
  claims: JWTPayload
  alg: 'RS256' | 'HS256'
  token: string
}

export function remoteKeys (url: string): JWTVerifyGetKey {
  return createRemoteJWKSet(new URL(url), { cooldownDuration: 30_000 })
}

/** Verifies the user-facing token: RS256 (web users) or HS256 (services, with the shared secret). */
export async function verifyCaller (authorization: string | undefined, settings: CallerSettings): Promise<Caller> {
  const m = authorization === undefined ? undefined : /^Bearer\s+(\S*)\s*$/i.exec(authorization)
  if (!m) throw unauthorized('missing Bearer token')
  const token = m[1]!
  if (token === '') throw unauthorized('empty Bearer token')
  let alg: string | undefined
  try {
    alg = decodeProtectedHeader(token).alg
  } catch {
    throw unauthorized('auth_failed:malformed')
  }
  try {
    if (alg === 'RS256') {
      const { payload } = await jwtVerify(token, settings.rs256, { algorithms: ['RS256'], clockTolerance: 30, requiredClaims: ['exp'] })
      return { claims: payload, alg, token }
    }
    if (alg === 'HS256' && settings.hs256Secret) {
      const { payload } = await jwtVerify(token, settings.hs256Secret, { algorithms: ['HS256'], clockTolerance: 30, requiredClaims: ['exp'] })
      return { claims: payload, alg, token }
    }
  } catch (err) {
    throw unauthorized(err instanceof errors.JWTExpired ? 'auth_failed:expired' : 'auth_failed:invalid_signature')
  }
  throw unauthorized('auth_failed:malformed')
}

/** The short-lived RS256 token of this service that stands in for a service's HS256 one. */
export async function exchangeToken (caller: Caller, key: { kid: string, privateKey: KeyObject }, issuer: string, audience: string, ttlS = 300): Promise<string> {
  const sub = typeof caller.claims.sub === 'string' ? caller.claims.sub : String(caller.claims['client_id'] ?? 'service')
  return new SignJWT({ client_id: caller.claims['client_id'] ?? sub, exchanged_from: 'HS256' })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(issuer)
    .setSubject(sub)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime(`${ttlS}s`)
    .sign(key.privateKey)
}
