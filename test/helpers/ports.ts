import { createServer } from 'node:net'

/** A loopback port free a moment ago, for a gateway that must know its own address before it listens (its token issuer). */
export async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise(resolve => server.close(resolve))
  return port
}

/**
 * The settings of a gateway on `port` whose harness gate (RS256) trusts the
 * gateway's own login keys, with the front door's orgs from `orgsFile`: a
 * token from its login is a valid identity-provider token for the harness.
 */
export function selfTrustingHarness (port: number, orgsFile: string): Record<string, string> {
  const issuer = `http://127.0.0.1:${port}/`
  return {
    PORT: String(port),
    AUTH_ISSUER: issuer,
    SVC_HARNESS_AUTH_ENABLED: 'true',
    IDP_ISSUER: issuer,
    IDP_JWKS_URL: `${issuer}.well-known/jwks.json`,
    IDP_RS256_AUDIENCE: 'harness',
    ORGS_FILE: orgsFile
  }
}
