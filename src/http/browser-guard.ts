import { GatewayError, refusal } from '../errors.js'
import type { Headers } from './context.js'

export interface BrowserGuardOptions {
  /** Host names answered besides IP literals and `localhost`; `*` answers any. */
  hosts: readonly string[]
  /** Browser origins answered besides the request's own (`scheme://host[:port]`). */
  origins: readonly string[]
}

/** A request the guard refuses, and why; undefined for one it lets through. */
export type BrowserGuard = (method: string, headers: Headers) => GatewayError | undefined

const JSON_TYPE = /^application\/json\s*(;|$)/i
/** An IPv4 or bracketed IPv6 literal, with an optional port: a name no DNS answer can rebind. */
const IP_LITERAL = /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-f:.]+\])(:\d+)?$/i

/** The name of a Host header, lower-cased, without its port. */
function hostName (host: string): string {
  const h = host.toLowerCase()
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1)
  const colon = h.lastIndexOf(':')
  return colon === -1 ? h : h.slice(0, colon)
}

/**
 * What a browser on another site can make a listener without credentials
 * do, refused on the headers alone:
 *
 * - DNS rebinding: a page of `evil.example` whose name now resolves to this
 *   listener sends `Host: evil.example`. A Host that is not an IP literal,
 *   `localhost` or a listed name is refused (`host_not_allowed`).
 * - Cross-origin requests: a browser names the page's origin in `Origin` on
 *   every POST and every cross-origin fetch; one that is neither the
 *   listener's own (same host) nor listed is refused (`origin_not_allowed`),
 *   `Origin: null` (a sandboxed frame, a file) included.
 * - Requests with no Origin at all (an old browser's form): a POST must
 *   carry what a cross-origin page cannot send without a preflight, which
 *   this listener never grants: `Content-Type: application/json`, an
 *   `Authorization` or an `X-Svc-Tenant-Client-Id` header. Otherwise 415
 *   with `Accept-Post`.
 */
export function browserGuard (options: BrowserGuardOptions): BrowserGuard {
  const anyHost = options.hosts.includes('*')
  const hosts = new Set(options.hosts.map(h => h.toLowerCase()))
  const origins = new Set(options.origins.map(o => o.toLowerCase().replace(/\/+$/, '')))
  return (method, headers) => {
    const host = headers['host']
    if (host !== undefined && !anyHost && !IP_LITERAL.test(host)) {
      const name = hostName(host)
      if (name !== 'localhost' && !name.endsWith('.localhost') && !hosts.has(name)) return refusal('host_not_allowed')
    }
    const origin = headers['origin']
    if (origin !== undefined) {
      const o = origin.toLowerCase()
      const own = host !== undefined && (o === `http://${host.toLowerCase()}` || o === `https://${host.toLowerCase()}`)
      if (!own && !origins.has(o)) return refusal('origin_not_allowed')
    }
    if (method === 'POST' && !JSON_TYPE.test(headers['content-type'] ?? '') && headers['authorization'] === undefined && headers['x-svc-tenant-client-id'] === undefined) {
      return new GatewayError('unsupported_media_type', 'unsupported_media_type: Content-Type must be application/json', { headers: { 'accept-post': 'application/json' } })
    }
    return undefined
  }
}
