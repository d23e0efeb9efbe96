import { createServer } from 'node:http'
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose'

interface Tap { teardown(fn: () => unknown): void }

export const IDP_ISSUER = 'https://idp.test/'
export const IDP_AUDIENCE = 'svc-harness'

export interface TestIdp {
  jwksUrl: string
  /** A token signed by the served key; `key: 'other'` signs with a key the set does not hold. */
  sign(claims?: JWTPayload, opts?: { iss?: string, aud?: string, expiresIn?: number, key?: 'served' | 'other', alg?: string }): Promise<string>
  fetches: () => number
}

/** An identity provider of the test's own: an RS256 key pair and its JWKS on a local HTTP server. */
export async function startIdp (t: Tap): Promise<TestIdp> {
  const served = await generateKeyPair('RS256')
  const other = await generateKeyPair('RS256')
  const jwk = { ...await exportJWK(served.publicKey), kid: 'k1', alg: 'RS256', use: 'sig' }
  let fetches = 0
  const server = createServer((_req, res) => {
    fetches++
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ keys: [jwk] }))
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => server.close(resolve)))
  const port = (server.address() as { port: number }).port
  return {
    jwksUrl: `http://127.0.0.1:${port}/jwks.json`,
    fetches: () => fetches,
    sign: (claims = {}, opts = {}) => new SignJWT({ sub: 'user-1', ...claims })
      .setProtectedHeader({ alg: opts.alg ?? 'RS256', kid: 'k1' })
      .setIssuer(opts.iss ?? IDP_ISSUER)
      .setAudience(opts.aud ?? IDP_AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + (opts.expiresIn ?? 600))
      .sign(opts.key === 'other' ? other.privateKey : served.privateKey)
  }
}

export function harnessAuthEnv (idp: TestIdp): Record<string, string> {
  return { SVC_HARNESS_AUTH_ENABLED: 'true', IDP_ISSUER, IDP_JWKS_URL: idp.jwksUrl, IDP_RS256_AUDIENCE: IDP_AUDIENCE }
}
