import type { KeyObject } from 'node:crypto'
import { createRemoteJWKSet, SignJWT, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import { bearerToken, tokenAlgorithm, verifyJwt } from '../auth/index.js'

const LEEWAY_S = 30

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

/** Verifies the user-facing token: RS256 (web users) or HS256 (services, when the shared secret is set). */
export async function verifyCaller (authorization: string | undefined, settings: CallerSettings): Promise<Caller> {
  const token = bearerToken(authorization)
  if (settings.hs256Secret && tokenAlgorithm(token) === 'HS256') {
    return { claims: await verifyJwt(token, settings.hs256Secret, { algorithms: ['HS256'], leewayS: LEEWAY_S }), alg: 'HS256', token }
  }
  return { claims: await verifyJwt(token, settings.rs256, { algorithms: ['RS256'], leewayS: LEEWAY_S }), alg: 'RS256', token }
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
