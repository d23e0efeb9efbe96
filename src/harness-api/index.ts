/**
 * The harness's HTTP interface as its two sides share it: the routes
 * `src/runs` serves and `src/frontdoor` fronts, and the header names they
 * pass between them. One list, so a route added to the harness is fronted
 * (or refused) by decision, not by omission; test/harness-api/routes.test.ts
 * holds both sides to it.
 */
export interface HarnessRoute {
  readonly method: 'GET' | 'POST'
  /** A `{id}` segment is a storage identifier. */
  readonly path: string
  /** Takes a query string (the front door forwards it; other routes take none, and it is dropped). */
  readonly query?: true
  /** The JSON answer's top-level `links` name harness paths (the front door re-roots them). */
  readonly links?: true
}

export const HARNESS_ROUTES = [
  { method: 'POST', path: '/runs' },
  { method: 'GET', path: '/runs', query: true },
  { method: 'GET', path: '/runs:watch' },
  { method: 'POST', path: '/runs:start', links: true },
  { method: 'GET', path: '/runs/{id}', query: true },
  { method: 'GET', path: '/runs/{id}/stream' },
  { method: 'POST', path: '/runs/{id}/cancel' },
  { method: 'GET', path: '/skills', query: true }
] as const satisfies readonly HarnessRoute[]

/** `POST /runs` and the like: what a route's handler is looked up by. */
export type HarnessRouteKey = KeyOf<typeof HARNESS_ROUTES[number]>
type KeyOf<R> = R extends { method: infer M extends string, path: infer P extends string } ? `${M} ${P}` : never

export function routeKey<R extends { method: string, path: string }> (route: R): KeyOf<R> {
  return `${route.method} ${route.path}` as KeyOf<R>
}

/** The tenant a request acts for, set by the front door (or a trusted caller) for the harness. */
export const TENANT_HEADER = 'x-svc-tenant-client-id'

/** The front door's signed word that it set TENANT_HEADER (src/auth/tenant-assertion.ts). */
export const TENANT_ASSERTION_HEADER = 'x-svc-tenant-assertion'
