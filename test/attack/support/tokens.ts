import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto'
import { exportJWK, SignJWT, type JWTPayload } from 'jose'
import { HARNESS_AUDIENCE, type Target } from './target.js'

/**
 * Tokens an attacker makes: each with the detail the spec's 401 gives for
 * it (docs/auth.md, docs/harness.md), or the 403 a valid token of the wrong
 * kind gets. `claims` are those of the caller the route expects; the attack
 * changes one thing.
 */
export interface Attack {
  name: string
  token: string
  /** The 401 detail on every route, or a route-independent 403. */
  expect: { status: 401, detail: string } | { status: 403 }
  /** The front door verifies HS256 with its own secret: a forged HS256 token fails there as a bad signature. */
  frontDoor?: { status: 401, detail: string }
}

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')

/** An RS256 JWS over exactly this header and payload (jose refuses to sign a `crit` it does not know). */
export function signRaw (header: Record<string, unknown>, payload: unknown, key: KeyObject): string {
  const input = `${b64(header)}.${b64(payload)}`
  return `${input}.${createSign('RSA-SHA256').update(input).sign(key).toString('base64url')}`
}
const nowS = (): number => Math.floor(Date.now() / 1000)

export async function attacks (target: Target, claims: JWTPayload, jku: string): Promise<Attack[]> {
  const attacker = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const attackerJwk = { ...await exportJWK(attacker.publicKey), kid: target.key.kid, alg: 'RS256' }
  const publicPem = target.key.publicKey.export({ type: 'spki', format: 'pem' }).toString()
  const publicJwk = JSON.stringify(await exportJWK(target.key.publicKey))
  const full: JWTPayload = { iss: target.issuer, iat: nowS(), exp: nowS() + 600, ...claims }
  const real = (c: JWTPayload, header: Record<string, unknown> = {}): Promise<string> => target.mint(c, header)
  const byAttacker = (header: Record<string, unknown> = {}): Promise<string> =>
    new SignJWT(full).setProtectedHeader({ alg: 'RS256', kid: target.key.kid, ...header }).sign(attacker.privateKey)
  const hs256 = (secret: string): Promise<string> => new SignJWT(full).setProtectedHeader({ alg: 'HS256', kid: target.key.kid }).sign(new TextEncoder().encode(secret))
  const malformed = { status: 401, detail: 'auth_failed:malformed' } as const
  const badSignature = { status: 401, detail: 'auth_failed:invalid_signature' } as const
  const valid = await real(full)
  const [header, payload, signature] = valid.split('.')
  return [
    { name: 'alg none', token: `${b64({ alg: 'none', typ: 'JWT' })}.${payload}.`, expect: malformed },
    { name: 'alg none, signature kept', token: `${b64({ alg: 'none', kid: target.key.kid })}.${payload}.${signature}`, expect: malformed },
    { name: 'alg NONE', token: `${b64({ alg: 'NONE' })}.${payload}.`, expect: malformed },
    { name: 'RS256 public key (PEM) as an HS256 secret', token: await hs256(publicPem), expect: malformed, frontDoor: badSignature },
    { name: 'RS256 public key (JWK) as an HS256 secret', token: await hs256(publicJwk), expect: malformed, frontDoor: badSignature },
    { name: 'signed by another key under our kid', token: await byAttacker(), expect: badSignature },
    { name: 'unknown kid', token: await real(full, { kid: 'no-such-key' }), expect: badSignature },
    { name: 'path-like kid', token: await real(full, { kid: '../../../../../etc/passwd' }), expect: badSignature },
    { name: 'short path-like kid', token: await real(full, { kid: '../../x' }), expect: badSignature },
    { name: 'kid with NUL and URL', token: await real(full, { kid: 'k1\u0000http://127.0.0.1/jwks' }), expect: badSignature },
    { name: 'jku to the attacker\'s key set', token: await byAttacker({ jku, kid: 'attacker' }), expect: badSignature },
    { name: 'x5u to the attacker', token: await byAttacker({ x5u: jku, kid: 'attacker' }), expect: badSignature },
    { name: 'embedded jwk of the attacker', token: await byAttacker({ jwk: attackerJwk }), expect: badSignature },
    { name: 'very long kid (1200 characters)', token: await real(full, { kid: 'k'.repeat(1200) }), expect: badSignature },
    { name: 'kid that is not a string', token: signRaw({ alg: 'RS256', kid: { $ne: null } }, full, target.key.privateKey), expect: malformed },
    { name: 'crit with an unknown extension', token: signRaw({ alg: 'RS256', kid: target.key.kid, crit: ['x-evil'], 'x-evil': true }, full, target.key.privateKey), expect: malformed },
    { name: 'crit naming a registered header', token: signRaw({ alg: 'RS256', kid: target.key.kid, crit: ['kid'] }, full, target.key.privateKey), expect: malformed },
    { name: 'crit empty', token: signRaw({ alg: 'RS256', kid: target.key.kid, crit: [] }, full, target.key.privateKey), expect: malformed },
    { name: 'expired', token: await real({ ...full, iat: nowS() - 7200, exp: nowS() - 3600 }), expect: { status: 401, detail: 'auth_failed:expired' } },
    { name: 'not valid yet (nbf)', token: await real({ ...full, nbf: nowS() + 3600 }), expect: malformed },
    { name: 'issued in the future (iat)', token: await real({ ...full, iat: nowS() + 3600 }), expect: malformed },
    { name: 'absurd exp (year 9999)', token: await real({ ...full, exp: 253402300799 }), expect: malformed },
    { name: 'no exp', token: await real({ ...full, exp: undefined }), expect: malformed },
    { name: 'exp as a string', token: await real({ ...full, exp: String(nowS() + 600) as unknown as number }), expect: malformed },
    { name: 'wrong audience', token: await real({ ...full, aud: 'someone-else' }), expect: { status: 401, detail: 'auth_failed:wrong_audience' } },
    { name: 'audience as a number', token: await real({ ...full, aud: 42 as unknown as string }), expect: { status: 401, detail: 'auth_failed:wrong_audience' } },
    { name: 'wrong issuer', token: await real({ ...full, iss: 'https://evil.example/' }), expect: { status: 401, detail: 'auth_failed:wrong_issuer' } },
    { name: 'payload edited after signing', token: `${header}.${b64({ ...full, scope: `${String(full['scope'] ?? '')} stream:write:any-client` })}.${signature}`, expect: badSignature },
    { name: 'signature cut short', token: `${header}.${payload}.${signature!.slice(0, 20)}`, expect: badSignature },
    { name: 'four segments', token: `${valid}.x`, expect: malformed },
    { name: 'not base64', token: 'a!b.c$d.e', expect: malformed },
    { name: 'header not JSON', token: `${Buffer.from('{alg').toString('base64url')}.${payload}.${signature}`, expect: malformed }
  ]
}

/** The claims of a harness caller (a member of acme). */
export const harnessClaims = (sub: string): JWTPayload => ({ sub, client_id: sub, aud: HARNESS_AUDIENCE, scope: 'runs' })
