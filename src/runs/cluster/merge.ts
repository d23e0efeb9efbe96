import type { RunRecord } from '../types.js'

/** One owner's page of a tenant's runs: its runs below the cursor, newest first, and where it stopped. */
export interface OwnerPage {
  runs: RunRecord[]
  /** The last run id it looked at (it may have more below), or null when it has none left. */
  next: string | null
}

/**
 * The cluster's page from each owner's: runs are spread over partitions, and
 * each owner pages its own. Only what lies above the highest point where an
 * owner stopped is known to be complete, so the page holds the newest
 * `limit` runs above it, and its cursor resumes at the last of them (or at
 * that point, when fewer were above it).
 */
export function mergePages (pages: readonly OwnerPage[], limit: number): { runs: RunRecord[], next: string | null } {
  let stop: string | null = null
  for (const p of pages) if (p.next !== null && (stop === null || p.next > stop)) stop = p.next
  const runs = pages.flatMap(p => p.runs).filter(r => stop === null || r.run_id >= stop)
  runs.sort((a, b) => a.run_id < b.run_id ? 1 : a.run_id > b.run_id ? -1 : 0)
  if (runs.length > limit) return { runs: runs.slice(0, limit), next: runs[limit - 1]!.run_id }
  return { runs, next: stop }
}
