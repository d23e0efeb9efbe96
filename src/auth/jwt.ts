import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import { unauthorized, type GatewayError, type UnauthorizedReason } from '../errors.js'

/**
 * One grammar for `Authorization: Bearer`, one set of claim rules and one
 * mapping of failures to the spec's 401 details, for every route that takes
 * a token (ingest, the front door, the harness).
 */

/** RFC 6750 §2.1: the scheme, one or more spaces, a b64token; trailing spaces tolerated. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i
const SCHEME_ONLY = /^Bearer *$/i

/**
 * The token of an `Authorization` header, or a 401 with the spec's detail:
 * `missing Bearer token` (no header, or another scheme), `empty Bearer token`
 * (the scheme and nothing else), `auth_failed:malformed` (anything else after
 * the scheme: a tab, a second word, a character outside the token grammar).
 */
export function bearerToken (authorization: string | undefined): string {
  if (authorization === undefined) throw unauthorized('missing Bearer token')
  const m = BEARER.exec(authorization)
  if (m) return m[1]!
  if (authorization.trim() === '' || SCHEME_ONLY.test(authorization)) throw unauthorized('empty Bearer token')
  if (/^Bearer\s/i.test(authorization)) throw unauthorized('auth_failed:malformed')
  throw unauthorized('missing Bearer token')
}

/**
 * The `alg` a token's header names, or undefined when it is not a JWS at all,
 * or its `kid` is not a string (RFC 7515 §4.1.4): jose matches a key set's
 * kids by equality and ignores `kid` for a single key, so an object or a
 * number there would pass as "no such key", or not be looked at.
 */
export function tokenAlgorithm (token: string): string | undefined {
  try {
    const header = decodeProtectedHeader(token)
    if ('kid' in header && typeof header.kid !== 'string') return undefined
    return header.alg
  } catch {
    return undefined
  }
}

/**
 * Seconds of clock skew every token check of this service allows on `exp`,
 * `nbf` and `iat`: a token issued on one machine is checked on another, whose
 * clock may differ by that much.
 */
export const TOKEN_LEEWAY_S = 30

/** Longest validity a token may claim from now: a year-9999 `exp` is no token we should honour. */
export const MAX_TOKEN_LIFETIME_S = 31 * 24 * 3600

/** A key set (lookup by kid), a public key, or an HS256 secret. */
export type VerifyKey = Parameters<typeof jwtVerify>[1]

export interface JwtRules {
  /** Accepted `alg` values; any other is `auth_failed:malformed` before a key is looked up. */
  algorithms: readonly string[]
  issuer?: string | undefined
  audience?: string | readonly string[] | undefined
  /** Seconds of clock skew allowed on exp, nbf and iat. */
  leewayS: number
  now?: number
}

/**
 * Verifies `token` against `key` under `rules`, and holds its time claims to
 * account: `exp` is required and at most MAX_TOKEN_LIFETIME_S ahead, `nbf`
 * and `iat` (when present) are not in the future. Failures are 401s with the
 * spec's details (see `jwtFailure`).
 */
export async function verifyJwt (token: string, key: VerifyKey, rules: JwtRules): Promise<JWTPayload> {
  const alg = tokenAlgorithm(token)
  if (alg === undefined || !rules.algorithms.includes(alg)) throw unauthorized('auth_failed:malformed')
  const now = rules.now ?? Date.now()
  let payload: JWTPayload
  try {
    payload = (await jwtVerify(token, key as JWTVerifyGetKey, {
      algorithms: [...rules.algorithms],
      ...(rules.issuer !== undefined ? { issuer: rules.issuer } : {}),
      ...(rules.audience !== undefined ? { audience: typeof rules.audience === 'string' ? rules.audience : [...rules.audience] } : {}),
      clockTolerance: rules.leewayS,
      requiredClaims: ['exp'],
      currentDate: new Date(now)
    })).payload
  } catch (err) {
    throw jwtFailure(err)
  }
  const nowS = now / 1000
  if (payload.exp! > nowS + MAX_TOKEN_LIFETIME_S) throw unauthorized('auth_failed:malformed')
  if (payload.iat !== undefined && payload.iat > nowS + rules.leewayS) throw unauthorized('auth_failed:malformed')
  return payload
}

/**
 * A jose failure as the spec's 401 detail. Only a past `exp` is `expired`;
 * a missing `exp`, or a token not valid yet (`nbf` or `iat` in the future),
 * is `malformed`: the spec has no detail of its own for either, and neither
 * is a token a client should log in again to replace (docs/auth.md).
 */
export function jwtFailure (err: unknown): GatewayError {
  return unauthorized(reason(err), err)
}

function reason (err: unknown): UnauthorizedReason {
  if (err instanceof errors.JWTExpired) return 'auth_failed:expired'
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return 'auth_failed:wrong_issuer'
    if (err.claim === 'aud') return 'auth_failed:wrong_audience'
    return 'auth_failed:malformed'
  }
  if (err instanceof errors.JWSSignatureVerificationFailed || err instanceof errors.JWKSNoMatchingKey || err instanceof errors.JWKSMultipleMatchingKeys) return 'auth_failed:invalid_signature'
  return 'auth_failed:malformed'
}
