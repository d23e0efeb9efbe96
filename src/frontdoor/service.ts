import type { KeyStore } from '../auth/index.js'
import type { Config } from '../config/index.js'
import { type RequestContext, type Route } from '../http/index.js'
import { GatewayError } from '../errors.js'
import { exchangeToken, remoteKeys, verifyCaller, type CallerSettings } from './caller.js'
import { loadOrgs, type Org } from './orgs.js'
import { proxy } from './proxy.js'

const TENANT_HEADER = 'x-svc-tenant-client-id'
const FORWARDED_REQUEST_HEADERS = ['content-type', 'accept', 'last-event-id']

/**
 * `/api/v1/orgs/{slug}/harness/*`: verifies the caller, checks membership of
 * the org, sets the org's tenant, and forwards to the harness. RS256 tokens
 * pass through (the harness verifies them again); HS256 service tokens are
 * exchanged for a short-lived RS256 token of this service.
 */
export class FrontDoor {
  private readonly orgs: ReadonlyMap<string, Org>
  private readonly caller: CallerSettings

  constructor (private readonly config: Config, private readonly keys: KeyStore, private readonly harnessUrl: string) {
    this.orgs = loadOrgs(config.orgsFile)
    this.caller = {
      rs256: config.frontdoorJwksUrl ? remoteKeys(config.frontdoorJwksUrl) : keys.getKey,
      hs256Secret: config.frontdoorHs256Secret ? new TextEncoder().encode(config.frontdoorHs256Secret) : undefined
    }
  }

  routes (): Route[] {
    const path = '/api/v1/orgs/{slug}/harness/*'
    return [
      { method: 'GET', path, errors: 'harness', handler: ctx => this.forward(ctx) },
      { method: 'POST', path, body: 'json', errors: 'harness', handler: ctx => this.forward(ctx) }
    ]
  }

  private async forward (ctx: RequestContext): Promise<undefined> {
    const caller = await verifyCaller(ctx.headers['authorization'], this.caller)
    const org = this.orgs.get(ctx.params['slug']!)
    const member = (id: unknown): boolean => typeof id === 'string' && org!.members.has(id)
    if (!org || !(member(caller.claims.sub) || member(caller.claims['client_id']))) throw new GatewayError('not_a_member', 'not_a_member:org')
    const token = caller.alg === 'RS256'
      ? caller.token
      : await exchangeToken(caller, this.keys.current, this.config.authIssuer, this.config.idpRs256Audience ?? 'harness')
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, [TENANT_HEADER]: org.tenant, 'x-request-id': ctx.requestId }
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const v = ctx.headers[name]
      if (v !== undefined) headers[name] = v
    }
    const target = new URL(`/${ctx.params['*']}${ctx.query ? `?${ctx.query}` : ''}`, this.harnessUrl)
    return proxy(ctx, target, headers, ctx.rawBody)
  }
}
