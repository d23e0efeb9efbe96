// What the runs scenario prints: bounds and log notes per row, the issue's
// targets, a table per phase, and the summary table's columns.
import { table, STATUS_COLUMN } from '../../lib/report.mjs'
import { fmt } from '../../lib/format.mjs'
import { formatStatuses } from '../../lib/logs.mjs'
import { boundKind, boundNote, cpuShares, littlesLaw, verdict } from '../../lib/verdicts.mjs'
import { figure, figuresOf } from '../../lib/figures.mjs'
import { TARGETS } from './knobs.mjs'
import { RUNS_RATIOS as RATIOS } from '../../lib/goals.mjs'

const MiB = 1024 * 1024

/** What limits a closed-loop throughput row, from the CPU figures (ctx.measure already notes a busy machine). */
function bound (ctx, r) {
  if (r.serverCpu === undefined || !r.reqPerSec) return undefined
  const kind = boundKind({ serverCpu: r.serverCpu, loadCpu: Math.max(r.wrkCpu ?? 0, r.system?.perCpuBusy?.[ctx.wrkCpu] ?? 0), othersCpu: r.othersCpu }, ctx.settings.busyThreshold)
  const waiting = `: ${littlesLaw(ctx.settings.connections, r.reqPerSec)}, ` +
    (r.mode === 'bare' ? 'waiting on nothing the server does' : 'waiting for LMDB commits mostly (the 202 waits for the queued record\'s commit)')
  return boundNote(kind, r, cpuShares(ctx, r, { loads: [['wrk', r.wrkCpu]] }), kind === 'waiting' ? waiting : '')
}

/** Per-row notes of the throughput phase: its bound, its access log, its backlog. */
export function throughputNotes (ctx, rows) {
  for (const r of rows) {
    if (r.error || r.phase !== 'throughput') continue
    const b = bound(ctx, r)
    if (b) r.notes.push(b)
    if (r.accessLog?.requests) r.notes.push(`access log: ${fmt.count(r.accessLog.requests)} lines (${formatStatuses(r.accessLog.statuses)}), ${Math.round(r.accessLog.bytesPerLine)} B each, ${(r.accessLog.bytes / MiB).toFixed(1)} MiB in all`)
    if (r.drainMs > 1000) r.notes.push(`${fmt.count(r.backlogAtEnd)} accepted runs had not ended when the load stopped (the last ended ${(r.drainMs / 1000).toFixed(1)} s later): runs are accepted faster than they are executed`)
  }
  const gw = rows.find(r => r.phase === 'throughput' && r.label === 'gateway' && !r.error)
  const quiet = rows.find(r => r.phase === 'throughput' && r.label === 'gateway-log-warn' && !r.error)
  return gw && quiet && gw.acceptedPerSec
    ? [`the access log's cost: gateway at info ${fmt.count(gw.acceptedPerSec)} runs/s, at warn (no request lines) ${fmt.count(quiet.acceptedPerSec)} runs/s (${((quiet.acceptedPerSec / gw.acceptedPerSec - 1) * 100).toFixed(0)}%)`]
    : []
}

/** The issue's targets and issue 15's ratios to the baselines of the same run, met or not. */
export function verdicts (rows, threshold) {
  const notes = []
  const v = (ok, r) => verdict(ok, [r], threshold)
  const gw = rows.find(r => r.phase === 'throughput' && r.label === 'gateway' && !r.error)
  if (gw) {
    const done = gw.completedPerSec
    notes.push(`target ≥ ${fmt.count(TARGETS.runsPerSec)} runs/s on one core with persistence: gateway ${fmt.count(gw.acceptedPerSec)} runs/s accepted (202), ${fmt.count(done)} runs/s ended during the load: ` +
      v(gw.acceptedPerSec >= TARGETS.runsPerSec && done >= TARGETS.runsPerSec, gw))
  }
  for (const dl of rows.filter(r => r.phase === 'delivery' && r.label === 'gateway' && !r.error && r.deliveryMs?.n)) {
    notes.push(`target SSE delivery p99 ≤ ${TARGETS.deliveryP99Ms} ms (${dl.load} load: ${dl.loadPoint.concurrency} runs × ${dl.loadPoint.subscribers} streams): gateway event stamp → client ${fmt.ms(dl.deliveryMs.p99)} ms p99 over ${fmt.count(dl.deliveryMs.n)} live deliveries, steps and run.completed (run.completed alone: ${fmt.ms(dl.completedMs?.p99)} ms over ${fmt.count(dl.completedMs?.n)}; ${fmt.count(dl.storedEventsPerSec)} events/s stored): ` +
      v(dl.deliveryMs.p99 <= TARGETS.deliveryP99Ms, dl))
  }
  // Issue 15's ratios against the baselines of the same run.
  const lmdb = rows.find(r => r.phase === 'throughput' && r.label === 'uws-lmdb-run' && !r.error)
  if (gw && lmdb?.acceptedPerSec) {
    const ratio = gw.acceptedPerSec / lmdb.acceptedPerSec
    notes.push(`target ≥ ${RATIOS.vsLmdbRun}× the same LMDB writes without the harness: gateway ${fmt.count(gw.acceptedPerSec)} / uws-lmdb-run ${fmt.count(lmdb.acceptedPerSec)} runs/s = ${fmt.ratio(ratio)}: ` +
      verdict(ratio >= RATIOS.vsLmdbRun, [gw, lmdb], threshold))
  }
  for (const dl of rows.filter(r => r.phase === 'delivery' && r.label === 'gateway' && !r.error && r.deliveryMs?.n)) {
    const mem = rows.find(r => r.phase === 'delivery' && r.label === 'uws-sse-memory' && r.load === dl.load && !r.error && r.deliveryMs?.n)
    if (!mem) continue
    const ratio = dl.deliveryMs.p99 / mem.deliveryMs.p99
    notes.push(`target SSE p99 ≤ ${RATIOS.sseVsMemory}× in-memory SSE (${dl.loadPoint.concurrency} × ${dl.loadPoint.subscribers}): gateway ${fmt.ms(dl.deliveryMs.p99)} ms / uws-sse-memory ${fmt.ms(mem.deliveryMs.p99)} ms = ${fmt.ratio(ratio)} over every live delivery (run.completed alone: ${fmt.ms(dl.completedMs?.p99)} / ${fmt.ms(mem.completedMs?.p99)} ms): ` +
      verdict(ratio <= RATIOS.sseVsMemory, [dl, mem], threshold))
  }
  // Not a target: how much of the gateway's delivery latency the design's commit-before-stream rule alone accounts for.
  const delivered = (label, load) => rows.find(r => r.phase === 'delivery' && r.label === label && r.load === load && !r.error && r.deliveryMs?.n)
  for (const lm of rows.filter(r => r.phase === 'delivery' && r.label === 'uws-sse-lmdb' && !r.error && r.deliveryMs?.n)) {
    const mem = delivered('uws-sse-memory', lm.load)
    const gwd = delivered('gateway', lm.load)
    if (!mem && !gwd) continue
    notes.push(`commit-before-stream floor (${lm.loadPoint.concurrency} × ${lm.loadPoint.subscribers}): uws-sse-lmdb p99 ${fmt.ms(lm.deliveryMs.p99)} ms` +
      (mem ? ` / uws-sse-memory ${fmt.ms(mem.deliveryMs.p99)} ms = ${fmt.ratio(lm.deliveryMs.p99 / mem.deliveryMs.p99)}` : '') +
      (gwd ? `; gateway / uws-sse-lmdb = ${fmt.ratio(gwd.deliveryMs.p99 / lm.deliveryMs.p99)}` : ''))
  }
  const cp = rows.filter(r => r.phase === 'capacity' && r.label === 'gateway' && !r.error).at(-1)
  if (cp) {
    const l = cp.levelStats
    const met = l.level >= TARGETS.subscribers && l.alive >= TARGETS.subscribers && cp.rssBytes < TARGETS.rssBytes
    notes.push(`target ${fmt.count(TARGETS.subscribers)} concurrent subscribers under 1 GiB RSS: gateway held ${fmt.count(l.alive)} live of ${fmt.count(l.level)} at ${fmt.mib(cp.rssBytes)} RSS (${fmt.kib(cp.perSubscriberBytes)} per subscriber above the ${fmt.mib(cp.rssBeforeBytes)} without any): ` +
      v(met, cp) + (l.level < TARGETS.subscribers ? ` (only ${l.level} tried)` : ''))
  }
  return notes
}

const target = { title: 'target', get: r => r.label, align: 'left' }
/** The closing columns of the throughput and delivery tables: memory, CPU of the server, the load and the rest, status. */
const resourceColumns = (loadTitle, loadCpu) => [
  { title: 'peak RSS', get: r => fmt.mib(r.peakRssBytes) },
  { title: 'srv CPU', get: r => fmt.pct(r.serverCpu) },
  { title: loadTitle, get: r => fmt.pct(loadCpu(r)) },
  { title: 'other CPU', get: r => fmt.pct(r.othersCpu) },
  STATUS_COLUMN
]
const pair = (a, b) => `${fmt.ms(a)}/${fmt.ms(b)}`

const PHASE_COLUMNS = {
  throughput: [
    target,
    { title: '202/s', get: r => fmt.count(r.acceptedPerSec) },
    { title: 'p50 ms', get: r => fmt.ms(r.latencyMs?.p50) },
    { title: 'p99 ms', get: r => fmt.ms(r.latencyMs?.p99) },
    { title: 'ended/s', get: r => fmt.count(r.completedPerSec) },
    { title: 'start→end p50/p99 ms', get: r => (r.completionLagMs?.n ? `${r.completionLagMs.p50}/${r.completionLagMs.p99}` : '-') },
    { title: 'backlog', get: r => fmt.count(r.backlogAtEnd) },
    { title: 'log B/req', get: r => (r.accessLog?.requests ? Math.round(r.accessLog.bytesPerLine) : '-') },
    ...resourceColumns('wrk CPU', r => r.wrkCpu)
  ],
  delivery: [
    target,
    { title: 'load', get: r => (r.loadPoint ? `${r.loadPoint.concurrency}×${r.loadPoint.subscribers}` : '-') },
    { title: 'runs', get: r => fmt.count(r.client?.runsFinished) },
    { title: 'streams', get: r => fmt.count(r.client?.streams) },
    { title: 'events/s stored', get: r => fmt.count(r.storedEventsPerSec) },
    { title: 'p50 ms', get: r => fmt.ms(r.deliveryMs?.p50) },
    { title: 'p99 ms', get: r => fmt.ms(r.deliveryMs?.p99) },
    { title: 'max ms', get: r => fmt.ms(r.deliveryMs?.max) },
    { title: 'step gap p50/p99', get: r => (r.client?.latencyMs.stepGap.n ? pair(r.client.latencyMs.stepGap.p50, r.client.latencyMs.stepGap.p99) : '-') },
    { title: 'start p99 ms', get: r => fmt.ms(r.client?.latencyMs.start.p99) },
    ...resourceColumns('client CPU', r => r.clientCpu)
  ],
  capacity: [
    target,
    { title: 'level', get: r => fmt.count(r.level) },
    { title: 'open', get: r => fmt.count(r.levelStats?.opened) },
    { title: 'alive', get: r => fmt.count(r.levelStats?.alive) },
    { title: 'closed', get: r => fmt.count(r.levelStats?.closed) },
    { title: 'connect s', get: r => (r.levelStats ? r.levelStats.connectSeconds.toFixed(1) : '-') },
    { title: 'RSS before', get: r => fmt.mib(r.rssBeforeBytes) },
    { title: 'RSS', get: r => fmt.mib(r.rssBytes) },
    { title: 'per sub', get: r => fmt.kib(r.perSubscriberBytes) },
    { title: 'marginal', get: r => fmt.kib(r.marginalPerSubscriberBytes) },
    { title: 'cancel → all ended', get: r => (r.cancel ? `${r.cancel.endedCleanly}/${r.cancel.streamsOpen} in ${r.cancel.lastEndMs === undefined ? '-' : (r.cancel.lastEndMs / 1000).toFixed(2)} s` : '') },
    { title: 'srv CPU', get: r => fmt.pct(r.serverCpu) },
    { title: 'client CPU', get: r => fmt.pct(r.clientCpu) },
    STATUS_COLUMN
  ]
}

/** One table per phase that has rows, each under a line saying how it was measured. */
export function phaseTables (rows, k, settings) {
  const s = k.sse
  const c = k.cap
  const what = {
    throughput: `throughput — wrk POST /runs:start {"message":"hello","mode":"echo"}, ${settings.connections} connections, ${settings.duration} s (+${settings.warmup} s warm-up, its runs drained first); "ended/s": runs whose ended_at falls in the measured window, from the server's LMDB`,
    delivery: `delivery — echo runs (steps ${s.steps}, delay_ms ${s.delayMs}) kept in flight × streams each ("load"), up to ${s.runs} runs or ${s.seconds} s (light load: ${Math.min(s.runs, 400)} runs or ${Math.min(s.seconds, 20)} s); latency = client receive time − the event's ended_at (run.completed, ms stamp: up to +1 ms); "step gap": time between two steps at a client (delay_ms + store + timer lateness)`,
    capacity: `capacity — ${c.runs} echo runs in flight (a step every ${c.delayMs} ms), streams opened round-robin ${c.batch} at a time up to each level, held ${c.holdMs} ms; RSS = server VmRSS (median of 5 reads); per sub = (RSS − RSS before any) / open streams; marginal = RSS growth / streams added since the previous level; alive = got a step during the hold`
  }
  return Object.entries(PHASE_COLUMNS)
    .map(([phase, columns]) => [phase, columns, rows.filter(r => r.phase === phase)])
    .filter(([, , phaseRows]) => phaseRows.length)
    .map(([phase, columns, phaseRows]) => `${what[phase]}\n${table(columns, phaseRows)}`)
}

/** The summary table: one row per phase and target. */
export const SUMMARY_COLUMNS = [
  { title: 'phase', get: r => r.phase, align: 'left' },
  target,
  {
    title: 'result',
    align: 'left',
    get: r => {
      if (r.error) return '-'
      if (r.phase === 'throughput') return `${fmt.count(r.acceptedPerSec)} runs/s accepted` + (r.completedPerSec !== undefined ? `, ${fmt.count(r.completedPerSec)}/s ended` : '')
      if (r.phase === 'delivery') return `${r.loadPoint.concurrency}×${r.loadPoint.subscribers} streams: ${fmt.count(r.deliveryMs?.n)} deliveries, ${fmt.count(r.storedEventsPerSec)} events/s stored`
      return `${fmt.count(r.levelStats?.alive)}/${fmt.count(r.level)} streams alive, ${fmt.kib(r.perSubscriberBytes)}/sub`
    }
  },
  { title: 'p50 ms', get: r => fmt.ms(r.phase === 'throughput' ? r.latencyMs?.p50 : r.deliveryMs?.p50) },
  { title: 'p99 ms', get: r => fmt.ms(r.phase === 'throughput' ? r.latencyMs?.p99 : r.deliveryMs?.p99) },
  { title: 'RSS', get: r => fmt.mib(r.phase === 'capacity' ? r.rssBytes : r.peakRssBytes) },
  { title: 'srv CPU', get: r => fmt.pct(r.serverCpu) },
  { title: 'load CPU', get: r => fmt.pct(r.phase === 'throughput' ? r.wrkCpu : r.clientCpu) },
  { title: 'other CPU', get: r => fmt.pct(r.othersCpu) },
  { title: 'vs baseline', get: r => fmt.ratio(r.vsBaseline) },
  STATUS_COLUMN
]

/** What the chart draws and `bench history` follows. */
export function figures (rows) {
  return figuresOf(rows, r => {
    if (r.phase === 'throughput') {
      return [
        figure(r, 'runs:start throughput', 'runs/s', r.label, 'accepted (202)', r.acceptedPerSec),
        figure(r, 'runs:start throughput', 'runs/s', r.label, 'ended', r.completedPerSec),
        ...['p50', 'p99'].map(p => figure(r, 'runs:start latency', 'ms', r.label, p, r.latencyMs?.[p]))
      ]
    }
    if (r.phase === 'delivery') {
      const group = `${r.label} ${r.loadPoint.concurrency}×${r.loadPoint.subscribers}`
      return ['p50', 'p99'].map(p => figure(r, 'SSE delivery, every live event', 'ms', group, p, r.deliveryMs?.[p]))
    }
    return [figure(r, 'server RSS holding SSE streams', 'MiB', `${r.label} ${fmt.count(r.level)}`, 'RSS', r.rssBytes / MiB)]
  })
}
