import { isStorageId } from '../validation/index.js'
import type { NotAllowed } from '../http/index.js'
import { HARNESS_ROUTES, type HarnessRoute } from '../harness-api/index.js'

/**
 * The harness routes the front door fronts, and nothing else: a path that
 * does not match one of these is 404 before any token is looked at, minted
 * or forwarded. The harness's own routes come from src/harness-api; the
 * health and console routes its port serves besides are added here.
 */
export interface FrontedRoute extends HarnessRoute {
  /**
   * Served to anyone, without a token: the console's page and files, which
   * hold no data (a browser that opens a link sends no Authorization header;
   * the page then asks for the token and sends it on every API call). No
   * token or tenant is forwarded on these.
   */
  readonly open?: true
}

export const FRONTED_ROUTES: readonly FrontedRoute[] = [
  ...HARNESS_ROUTES,
  { method: 'GET', path: '/health' },
  { method: 'GET', path: '/health/ready' },
  { method: 'GET', path: '/console', open: true },
  { method: 'GET', path: '/console/runs/{id}', open: true },
  { method: 'GET', path: '/console/assets/{id}', open: true }
]

const ID = '{id}'

/**
 * The fronted route a raw (still percent-encoded) path names. Segments are
 * compared as they came: `%2e%2e`, `%2f`, `\`, an empty segment or any other
 * spelling is no literal and no storage identifier, so it matches nothing.
 */
export function matchFronted (method: string, rawPath: string): FrontedRoute | NotAllowed | undefined {
  const allowed = new Set<string>()
  for (const route of FRONTED_ROUTES) {
    if (!matches(route.path, rawPath)) continue
    if (route.method === method) return route
    allowed.add(route.method)
  }
  return allowed.size > 0 ? { allowed: [...allowed].sort() } : undefined
}

/** True when `rawPath` names a fronted route by any method: a link the front door can serve. */
export function isFrontedPath (rawPath: string): boolean {
  return FRONTED_ROUTES.some(r => matches(r.path, rawPath))
}

/** Every literal equal and every `{id}` a storage identifier: the path is then made of the table's own characters. */
function matches (pattern: string, rawPath: string): boolean {
  const want = pattern.split('/')
  const got = rawPath.split('/')
  return want.length === got.length && want.every((w, i) => w === ID ? isStorageId(got[i]) : w === got[i])
}
