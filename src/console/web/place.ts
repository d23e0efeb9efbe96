/**
 * Where the page was reached: on the harness port (`/console…`) or through
 * the front door (`…/api/v1/orgs/{slug}/harness/console…`). The API is at
 * the path before `/console`. The ingest panel's counters: `/console/metrics`
 * on the harness port, `/metrics` at the root of the front door's origin.
 */
export interface Place {
  /** The API's base path ('' on the harness port). */
  root: string
  frontDoor: boolean
  metrics: string
  /** The run of a `/console/runs/{id}` page. */
  runId: string | undefined
}

const FRONT_DOOR = /\/api\/v1\/orgs\/[^/]+\/harness$/

export function place (pathname: string): Place {
  const m = /^(.*?)\/console(?:\/runs\/([^/]+))?\/?$/.exec(pathname)
  const root = m?.[1] ?? ''
  return {
    root,
    frontDoor: FRONT_DOOR.test(root),
    metrics: FRONT_DOOR.test(root) ? `${root.replace(FRONT_DOOR, '')}/metrics` : `${root}/console/metrics`,
    runId: m?.[2] === undefined ? undefined : decodeURIComponent(m[2])
  }
}

export const here = place(location.pathname)

export function runHref (runId: string): string {
  return `${here.root}/console/runs/${encodeURIComponent(runId)}`
}
