import { bearerToken, signTenantAssertion, TENANT_ASSERTION_HEADER, type KeyStore, type Revocation } from '../auth/index.js'
import type { Config } from '../config/index.js'
import { proxy, serveLocal, upstreamOf, type LocalRoute, type Reply, type RequestContext, type Route, type Upstream } from '../http/index.js'
import { refusal } from '../errors.js'
import { TENANT_HEADER } from '../harness-api/index.js'
import { exchangeToken, remoteKeys, verifyCaller, type CallerSettings } from './caller.js'
import { rerootAnswer, rerootLinks } from './links.js'
import { loadOrgs, type Org } from './orgs.js'
import { FRONTED_ROUTES, matchFronted, type FrontedRoute } from './routes.js'

/** What the headers decided: the fronted route and the headers it is forwarded with. */
interface Pass {
  readonly route: FrontedRoute
  /** The harness path. */
  readonly rest: string
  readonly headers: Record<string, string>
}

/** The harness's own routes, served in this process (its HTTP server's lookup). */
export interface LocalHarness {
  local(method: string, path: string): LocalRoute | undefined
}

const FORWARDED_REQUEST_HEADERS = ['content-type', 'accept', 'last-event-id']
const PREFIX = '/api/v1/orgs/{slug}/harness'

/** RFC 3986 query characters: what a fronted route that takes a query may pass on. */
const QUERY = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*$/

/**
 * `/api/v1/orgs/{slug}/harness/*`: checks that the rest of the path is a
 * fronted harness route (404 otherwise, before anything else), verifies the
 * caller, checks membership of the org, sets the org's tenant, and forwards
 * to the harness. RS256 tokens pass through (the harness verifies them
 * again); HS256 service tokens are exchanged for a short-lived RS256 token of
 * this service. With HARNESS_TENANT_ASSERTION_SECRET set, the tenant goes
 * with an assertion binding it to the forwarded token.
 *
 * The harness is a URL (HARNESS_URL: another process, reached with proxy())
 * or this process's own routes, which serve the forwarded request
 * in-process (serveLocal): the same checks of the harness's gate and the
 * same answers, without a loopback connection, its descriptors and a
 * second parse of every request and answer.
 */
export class FrontDoor {
  private readonly orgs: ReadonlyMap<string, Org>
  private readonly caller: CallerSettings
  private readonly upstream: Upstream | undefined
  private readonly harness: LocalHarness | undefined

  /**
   * `harness`: HARNESS_URL, or the harness's routes in this process (each
   * fronted row must be one of them).
   * `revocation`: this service's user tokens of a client removed or rotated since are refused.
   */
  constructor (private readonly config: Config, private readonly keys: KeyStore, harness: string | LocalHarness, private readonly revocation?: Revocation) {
    this.orgs = loadOrgs(config.orgsFile)
    this.caller = {
      rs256: config.frontdoorJwksUrl ? remoteKeys(config.frontdoorJwksUrl) : keys.getKey,
      hs256Secret: config.frontdoorHs256Secret ? new TextEncoder().encode(config.frontdoorHs256Secret) : undefined
    }
    if (typeof harness === 'string') {
      this.upstream = upstreamOf(harness)
      return
    }
    for (const row of FRONTED_ROUTES) {
      const served = harness.local(row.method, row.path)
      if (served === undefined || served.route.body === 'stream') throw new Error(`the front door fronts ${row.method} ${row.path}, which this process's harness does not serve with a collected body`)
    }
    this.harness = harness
  }

  routes (): Route[] {
    const methods = new Set(FRONTED_ROUTES.map(r => r.method))
    return [...methods].map(method => ({
      method,
      path: `${PREFIX}/*`,
      ...(method === 'POST' ? { body: 'json' as const } : {}),
      errors: 'harness' as const,
      authorize: (ctx: RequestContext) => this.admit(ctx),
      handler: (ctx: RequestContext, pass: Pass) => this.forward(ctx, pass)
    }))
  }

  /**
   * Everything decided from the headers, before a byte of the body is
   * collected: the fronted route, the caller's token, the membership, the
   * headers to forward. A caller refused here never holds body memory.
   */
  private admit (ctx: RequestContext): Pass | Promise<Pass> {
    const rest = `/${ctx.params['*']!}`
    const route = matchFronted(ctx.method, rest)
    if (route === undefined) throw refusal('route_not_found')
    if ('allowed' in route) throw refusal('method_not_allowed', { value: ctx.method, headers: { allow: route.allowed.join(', ') } })
    ctx.route = `${PREFIX}${route.path}`
    if (route.query && !QUERY.test(ctx.query)) throw refusal('invalid_query')
    if (route.open) return { route, rest, headers: { 'x-request-id': ctx.requestId } }
    // A missing or malformed Authorization header is refused now, synchronously, before uWS hands over any of the body.
    bearerToken(ctx.headers['authorization'])
    return this.vouch(ctx, route, rest)
  }

  private async vouch (ctx: RequestContext, route: FrontedRoute, rest: string): Promise<Pass> {
    const caller = await verifyCaller(ctx.headers['authorization'], this.caller)
    if (caller.alg === 'RS256' && this.config.frontdoorJwksUrl === undefined) await this.revocation?.check(caller.claims)
    const org = this.orgs.get(ctx.params['slug']!)
    const member = (id: unknown): boolean => typeof id === 'string' && org!.members.has(id)
    if (!org || !(member(caller.claims.sub) || member(caller.claims['client_id']))) throw refusal('not_a_member:org')
    const token = caller.alg === 'RS256'
      ? caller.token
      : await exchangeToken(caller, this.keys.current, this.config.authIssuer, this.config.idpRs256Audience ?? 'harness')

    // Built from nothing the caller sent but the listed headers: a caller's own tenant header or assertion never passes.
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, [TENANT_HEADER]: org.tenant, 'x-request-id': ctx.requestId }
    const secret = this.config.harnessTenantAssertionSecret
    if (secret !== undefined) headers[TENANT_ASSERTION_HEADER] = signTenantAssertion(secret, org.tenant, token)
    for (const name of FORWARDED_REQUEST_HEADERS) {
      const v = ctx.headers[name]
      if (v !== undefined) headers[name] = v
    }
    return { route, rest, headers }
  }

  private forward (ctx: RequestContext, pass: Pass): Reply | undefined | Promise<Reply | undefined> {
    const { route, rest, headers } = pass
    const query = route.query ? ctx.query : ''
    const prefix = ctx.path.slice(0, ctx.path.length - rest.length)
    if (this.harness !== undefined) {
      // Checked at start for every row: the harness serves each.
      const served = this.harness.local(ctx.method, rest)!
      const answer = serveLocal(ctx, served, { path: rest, query, headers })
      if (!route.links) return answer
      return answer instanceof Promise ? answer.then(reply => rerooted(reply, prefix)) : rerooted(answer, prefix)
    }
    return proxy(ctx, this.upstream!, {
      path: `${rest}${query === '' ? '' : `?${query}`}`,
      headers,
      body: ctx.method === 'POST' && !route.open ? ctx.rawBody : undefined,
      rewrite: route.links ? body => rerootLinks(body, prefix) : undefined
    })
  }
}

function rerooted (reply: Reply | undefined, prefix: string): Reply | undefined {
  return reply?.body === undefined ? reply : { ...reply, body: rerootAnswer(reply.body, prefix) }
}
