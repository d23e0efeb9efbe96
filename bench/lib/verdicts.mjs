// Reading a measured row: do its figures count, is a target met, was the
// machine quiet, and what limits it.
import { fmt } from './format.mjs'

/** A row without an error or problems: its figures count. */
export const isClean = r => !r.error && !(r.problems?.length)

/** The table's status column. */
export const statusOf = r => (r.error ? 'FAILED' : r.problems?.length ? 'FLAGGED' : 'ok')

/** 'met' / 'NOT met', and whether a row it rests on was flagged or measured on a busy machine. */
export function verdict (ok, rows, threshold) {
  const flagged = rows.filter(r => !isClean(r))
  const noisy = rows.filter(r => r.othersCpu > threshold)
  return (ok ? 'met' : 'NOT met') +
    (flagged.length ? ` (${flagged.map(r => r.label).join(', ')} flagged)` : '') +
    (noisy.length ? ` (machine not quiet during ${noisy.map(r => r.label).join(', ')}: figures low and noisy)` : '')
}

/** The note for a row during which other processes took `othersCpu` cores; `detail` follows the share. */
export function notQuiet (othersCpu, detail = '') {
  return `other processes used ${fmt.pct(othersCpu)} of a core${detail}: the machine was not quiet, figures are low and noisy; run again when it is idle`
}

/** How busy the load generator's CPU was during a row (undefined when not pinned). */
export const loadCoreBusy = (r, ctx) => (ctx.wrkCpu === undefined ? undefined : r.system?.perCpuBusy?.[ctx.wrkCpu])

/**
 * What limits a row, from its CPU shares: 'busy' (other processes took more
 * than `threshold` of a core: unclear), 'both' (the server's core and the
 * load core ≥ 90%), 'server' (its core ≥ 90%: CPU-bound), 'load' (the load
 * core ≥ 90%: the figure is a lower bound), or 'waiting' (neither: requests
 * wait for something, a commit, an acknowledgment).
 */
export function boundKind ({ serverCpu, loadCpu, othersCpu }, threshold) {
  if (othersCpu > threshold) return 'busy'
  const loadBusy = loadCpu >= 0.9
  if (serverCpu >= 0.9) return loadBusy ? 'both' : 'server'
  return loadBusy ? 'load' : 'waiting'
}

/**
 * "server 93% of CPU0; CPU1 40% busy (wrk 30%, Kafka 8%)": the CPU shares a
 * bound rests on. `loads`: [name, share] of the processes on the load core.
 */
export function cpuShares (ctx, r, { server = 'server', loads = [] } = {}) {
  const named = loads.filter(([, v]) => v !== undefined).map(([n, v]) => `${n} ${fmt.pct(v)}`).join(', ')
  return ctx.serverCpu === undefined
    ? `${server} ${fmt.pct(r.serverCpu)} of a core${named ? `, ${named}` : ''} (not pinned)`
    : `${server} ${fmt.pct(r.serverCpu)} of CPU${ctx.serverCpu}; CPU${ctx.wrkCpu} ${fmt.pct(loadCoreBusy(r, ctx))} busy${named ? ` (${named})` : ''}`
}

const BOUND = {
  both: 'both cores are saturated',
  server: 'the server\'s CPU',
  load: 'the load core is saturated, the server is not: the figure is a lower bound for the server',
  waiting: 'waiting, not CPU'
}

/** "bound: <what boundKind found for row r> (<shares>)<more>". */
export function boundNote (kind, r, shares, more = '') {
  const what = kind === 'busy' ? `unclear, other processes took ${fmt.pct(r.othersCpu)} of a core during the run` : BOUND[kind]
  return `bound: ${what} (${shares})${more}`
}

/** The time each request spends in flight by Little's law, in words. */
export const littlesLaw = (connections, perSec) =>
  `${connections} requests in flight at ${Math.round(perSec)}/s means ${(connections / perSec * 1000).toFixed(2)} ms each (Little's law)`
