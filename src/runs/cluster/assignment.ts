/** A member of the runs group as its join metadata describes it. */
export interface Member {
  memberId: string
  /** Partitions it held before this rebalance: kept where the balance allows, so a join moves as few runs as it can. */
  owned: readonly number[]
}

/**
 * Partitions 0..count-1 spread over `members`: each member gets ⌊count/n⌋
 * or ⌈count/n⌉, and keeps as many of the partitions it `owned` as that
 * allows (a partition claimed by two members goes to the first in member
 * order). The same input gives the same output, whichever member computes it.
 */
export function assignPartitions (members: readonly Member[], count: number): Map<string, number[]> {
  const sorted = [...members].sort((a, b) => a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0)
  const result = new Map<string, number[]>(sorted.map(m => [m.memberId, []]))
  if (sorted.length === 0) return result
  const floor = Math.floor(count / sorted.length)
  let ceilings = count % sorted.length
  const taken = new Set<number>()
  const claims = new Map<number, number>()
  for (const m of sorted) for (const p of valid(m.owned, count)) claims.set(p, (claims.get(p) ?? 0) + 1)
  // Members keeping more go first, so the ⌈count/n⌉ places go to those that lose least by them;
  // each keeps first what no other member claims, so a partition two members claim goes where it costs least.
  const byKept = [...sorted].sort((a, b) => valid(b.owned, count).length - valid(a.owned, count).length)
  for (const m of byKept) {
    const mine = result.get(m.memberId)!
    const kept = valid(m.owned, count).filter(p => !taken.has(p)).sort((a, b) => claims.get(a)! - claims.get(b)!)
    const quota = kept.length > floor && ceilings > 0 ? floor + 1 : floor
    if (quota > floor) ceilings--
    for (const p of kept.slice(0, quota)) {
      mine.push(p)
      taken.add(p)
    }
  }
  const free = Array.from({ length: count }, (_, p) => p).filter(p => !taken.has(p))
  // First up to ⌊count/n⌋ everywhere, then the remaining ⌈count/n⌉ places, in member order.
  for (const m of sorted) {
    const mine = result.get(m.memberId)!
    while (mine.length < floor && free.length > 0) mine.push(free.shift()!)
  }
  for (const m of sorted) {
    const mine = result.get(m.memberId)!
    if (free.length === 0) break
    if (mine.length === floor && ceilings > 0) {
      mine.push(free.shift()!)
      ceilings--
    }
  }
  for (const mine of result.values()) mine.sort((a, b) => a - b)
  return result
}

/** The distinct partitions of `owned` that exist. */
function valid (owned: readonly number[], count: number): number[] {
  return [...new Set(owned)].filter(p => Number.isInteger(p) && p >= 0 && p < count)
}
