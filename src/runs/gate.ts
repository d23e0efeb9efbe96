import { createRemoteJWKSet, type JWTVerifyGetKey } from 'jose'
import { bearerToken, TENANT_ASSERTION_HEADER, verifyJwt, verifyTenantAssertion, type Revocation } from '../auth/index.js'
import type { Headers } from '../http/index.js'
import { unauthorized } from '../errors.js'
import { TENANT_HEADER } from '../harness-api/index.js'
import { isStorageId } from '../validation/index.js'

const LEEWAY_S = 30
const DEFAULT_TENANT = 'default'

export interface GateSettings {
  enabled: boolean
  issuer?: string | undefined
  jwksUrl?: string | undefined
  audience?: string | undefined
  /** HARNESS_TENANT_ASSERTION_SECRET: when set, a tenant header counts only with the front door's assertion. */
  tenantAssertionSecret?: string | undefined
  /**
   * When the identity provider is this service (IDP_ISSUER is AUTH_ISSUER),
   * its tokens of a client removed or rotated since are refused here as on
   * every other port, not left to live out their lifetime.
   */
  revocation?: { ownIssuer: string, check: Revocation['check'] } | undefined
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

  /**
   * The tenant of the request, or a 401 with the spec's detail. The token
   * is checked first, so its failures keep their own details; then every
   * tenant problem is `auth_failed:tenant_unresolved`, in every mode: a
   * header that is not a storage identifier (empty, padded inside, two
   * values joined), and, with the assertion secret set, a header without a
   * valid assertion binding it to this request's bearer token. Without a
   * header, auth off means the `default` tenant (the spec's open mode).
   */
  tenant (headers: Headers): string | Promise<string> {
    if (!this.settings.enabled) return this.tenantOf(headers)
    return verifyJwt(bearerToken(headers['authorization']), this.keys!, { algorithms: ['RS256'], issuer: this.settings.issuer!, audience: this.settings.audience!, leewayS: LEEWAY_S })
      .then(async claims => {
        const revocation = this.settings.revocation
        if (revocation !== undefined && claims.iss === revocation.ownIssuer) await revocation.check(claims)
        return this.tenantOf(headers)
      })
  }

  /**
   * The tenant header's, once the token (if any is required) has passed.
   * Without auth nothing here waits, so nothing here is a promise: the
   * server runs a synchronous check in the same turn, where a promise would
   * cost every request of the open mode a turn of its own.
   */
  private tenantOf (headers: Headers): string {
    const tenant = headers[TENANT_HEADER]
    if (tenant === undefined) {
      if (this.settings.enabled) throw unauthorized('auth_failed:tenant_unresolved')
      return DEFAULT_TENANT
    }
    if (!isStorageId(tenant)) throw unauthorized('auth_failed:tenant_unresolved')
    const secret = this.settings.tenantAssertionSecret
    if (secret !== undefined && !this.asserted(secret, headers, tenant)) throw unauthorized('auth_failed:tenant_unresolved')
    return tenant
  }

  private asserted (secret: string, headers: Headers, tenant: string): boolean {
    let token: string
    try {
      token = bearerToken(headers['authorization'])
    } catch {
      return false
    }
    return verifyTenantAssertion(secret, headers[TENANT_ASSERTION_HEADER], tenant, token, LEEWAY_S)
  }
}
