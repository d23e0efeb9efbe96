// Logging in as the spec says (POST /api/v1/login, client credentials), and
// the bench's own client: one clients-file entry for the gateways it starts.

import { createSign, randomUUID } from 'node:crypto'

export const AUDIENCE = 'evidence-gateway'
/** The gateway's AUTH_ISSUER default; the baselines that check tokens check the same. */
export const ISSUER = 'http://127.0.0.1:8080/'
export const CLIENT = { client_id: 'bench', client_secret: 'bench-secret', audiences: [AUDIENCE], scopes: ['asset:track:write', 'stream:write'] }

/** The access token of `client` for `audience` from the login host at `baseUrl`; throws with the answer otherwise. */
export async function login (baseUrl, client = CLIENT, audience = AUDIENCE, timeoutMs = 10000) {
  const res = await fetch(`${baseUrl}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, audience }),
    signal: AbortSignal.timeout(timeoutMs)
  })
  const text = await res.text()
  let token
  try { token = JSON.parse(text).access_token } catch {}
  if (res.status !== 200 || typeof token !== 'string') throw new Error(`login answered ${res.status}: ${text.slice(0, 300)}`)
  return token
}

/**
 * An RS256 JWT like the gateway's (kid, iss, aud, sub, client_id, scope,
 * tenant, iat, exp, jti) for the baselines that verify tokens with a public
 * key file (Fastify, the Go peer), signed with node:crypto.
 */
export function signToken (privateKey, kid, client = CLIENT) {
  const b64 = o => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  const input = `${b64({ alg: 'RS256', kid, typ: 'JWT' })}.${b64({
    client_id: client.client_id, scope: client.scopes.join(' '), tenant: client.client_id,
    iss: ISSUER, sub: client.client_id, aud: AUDIENCE, iat: now, exp: now + 86400, jti: randomUUID()
  })}`
  return `${input}.${createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')}`
}
