import { createRemoteJWKSet, type JWTVerifyGetKey } from 'jose'
import { bearerToken, verifyJwt } from '../auth/index.js'
import type { Headers } from '../http/index.js'
import { unauthorized } from '../errors.js'

export const TENANT_HEADER = 'x-svc-tenant-client-id'
const LEEWAY_S = 30

export interface GateSettings {
  enabled: boolean
  issuer?: string | undefined
  jwksUrl?: string | undefined
  audience?: string | undefined
}

/**
 * The harness's own check, whatever the front door did: RS256 against the
 * configured key set (cached; refetched on an unknown kid, with a cooldown),
 * 30 s of leeway on exp, exact iss, aud containing ours, and the tenant header.
 * Each 401 carries exactly the spec's detail string.
 */
export class HarnessGate {
  private readonly keys: (JWTVerifyGetKey & { reload(): Promise<void> }) | undefined

  constructor (private readonly settings: GateSettings) {
    if (settings.enabled) {
      if (!settings.issuer || !settings.jwksUrl || !settings.audience) throw new Error('harness auth enabled without IDP_ISSUER, IDP_JWKS_URL and IDP_RS256_AUDIENCE')
      this.keys = createRemoteJWKSet(new URL(settings.jwksUrl), { cooldownDuration: 30_000, cacheMaxAge: 10 * 60_000 })
    }
  }

  /** Fetches the key set now (readiness: the harness is not ready until it has one). */
  async loadKeys (): Promise<void> {
    await this.keys?.reload()
  }

  /** The tenant of the request, or a 401 with the spec's detail. */
  async tenant (headers: Headers): Promise<string> {
    const header = headers[TENANT_HEADER]
    if (!this.settings.enabled) return header || 'default'
    const token = bearerToken(headers['authorization'])
    await verifyJwt(token, this.keys!, { algorithms: ['RS256'], issuer: this.settings.issuer!, audience: this.settings.audience!, leewayS: LEEWAY_S })
    if (!header) throw unauthorized('auth_failed:tenant_unresolved')
    return header
  }
}
