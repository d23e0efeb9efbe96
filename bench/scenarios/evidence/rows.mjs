// Reading the evidence scenario's runs: repeated runs folded into one row
// each, ratios to the direct upload, what bounds each row, the issue's
// targets, and the table's columns.
import { fmt } from '../../lib/format.mjs'
import { median } from '../../lib/stats.mjs'
import { STATUS_COLUMN } from '../../lib/report.mjs'
import { boundKind, boundNote, cpuShares, isClean, loadCoreBusy, notQuiet } from '../../lib/verdicts.mjs'
import { figure, figuresOf } from '../../lib/figures.mjs'
import { LAG_RESOLUTION_S, MiB, TARGETS, lagMs } from './knobs.mjs'

/**
 * One row per target and concurrency from its repeated runs: the median MB/s
 * and event-loop p99, the highest peak RSS; CPU figures of the run closest to
 * the median; every run in `runs`; problems and notes of all, by run.
 */
export function aggregate (runs) {
  const groups = new Map()
  for (const r of runs) groups.set(`${r.label}|${r.concurrency}`, [...(groups.get(`${r.label}|${r.concurrency}`) ?? []), r])
  return [...groups.values()].map(group => {
    const ok = group.filter(r => !r.error)
    const tagged = (r, text) => (group.length > 1 ? `run ${r.rep}: ${text}` : text)
    const problems = [...new Set(group.flatMap(r => (r.problems ?? []).map(p => tagged(r, p))))]
    const notes = [...new Set(group.flatMap(r => (r.notes ?? []).map(n => tagged(r, n))))]
    if (ok.length === 0) return { ...group[0], problems, notes, runs: group }
    const mbPerSec = median(ok.map(r => r.mbPerSec))
    const closest = ok.reduce((a, b) => (Math.abs(b.mbPerSec - mbPerSec) < Math.abs(a.mbPerSec - mbPerSec) ? b : a))
    const peaks = ok.map(r => r.peakRssBytes).filter(x => x !== undefined)
    const lags = ok.map(r => r.lagP99Seconds)
    return {
      ...closest,
      rep: undefined,
      mbPerSec,
      mbPerSecRange: [Math.min(...ok.map(r => r.mbPerSec)), Math.max(...ok.map(r => r.mbPerSec))],
      peakRssBytes: peaks.length ? Math.max(...peaks) : undefined,
      lagP99Seconds: median(lags),
      lagP99Range: lags.some(x => x === undefined) ? undefined : [Math.min(...lags), Math.max(...lags)],
      othersCpu: Math.max(...ok.map(r => r.othersCpu ?? 0)),
      failedRuns: group.length - ok.length,
      problems,
      notes,
      runs: group
    }
  })
}

const same = (a, b) => a.concurrency === b.concurrency && a.partSize === b.partSize && a.queueSize === b.queueSize
const directOf = (rows, r) => rows.find(b => b.baseline && !b.error && b.mbPerSec && same(b, r))

/** Ratios to the direct upload at the same concurrency and settings, a bound per row, the busy-machine notes. */
function annotate (rows, ctx) {
  for (const r of rows) {
    if (r.error) continue
    const shares = r.baseline
      ? cpuShares(ctx, { serverCpu: r.uploaderCpu, system: r.system }, { server: 'uploader', loads: [['MinIO', r.minioCpu]] })
      : cpuShares(ctx, r, { server: 'gateway', loads: [['client', r.clientCpu], ['MinIO', r.minioCpu]] })
    if (r.baseline) r.notes.push(`${shares}, over its timed uploads`)
    else if (r.mbPerSec) {
      const d = directOf(rows, r)
      if (d) r.vsDirect = r.mbPerSec / d.mbPerSec
      const kind = boundKind({ serverCpu: r.serverCpu, loadCpu: loadCoreBusy(r, ctx) }, Infinity)
      const more = { both: '', server: '', load: '; the client and MinIO share that core', waiting: ': the pipeline waits (MinIO\'s writes, parts in flight, TCP flow control)' }
      r.bound = boundNote(kind, r, shares, more[kind])
      r.notes.push(r.bound)
    }
  }
  for (const r of rows) {
    const runs = r.runs ?? [r]
    const busy = runs.filter(x => x.othersCpu > ctx.settings.busyThreshold)
    const each = busy.length > 1 ? ` (${busy.map(x => fmt.pct(x.othersCpu)).join(', ')})` : ''
    if (busy.length) r.notes.push(notQuiet(Math.max(...busy.map(x => x.othersCpu)), ` during ${busy.length} of ${runs.length} run(s)${each}`))
  }
}

/** The issue's three targets for each gateway row, met or not. */
function verdicts (rows, maxC) {
  const notes = []
  for (const r of rows.filter(r => !r.baseline && !r.error)) {
    const tag = `${r.label} ×${r.concurrency} (${r.partSize / MiB} MiB parts, queue ${r.queueSize})`
    const met = ok => (ok ? 'met' : 'NOT met') + (isClean(r) ? '' : ' (row flagged)')
    const d = directOf(rows, r)
    const n = r.runs?.filter(x => !x.error).length ?? 1
    const range = (v, f) => (n > 1 && v ? `, runs ${f(v[0])}–${f(v[1])}` : '')
    const of = n > 1 ? `median of ${n} runs` : '1 run'
    if (r.vsDirect !== undefined) {
      notes.push(`target throughput ≥ ${TARGETS.ratio}× direct: ${tag} ${r.mbPerSec.toFixed(0)} MB/s (${of}${range(r.mbPerSecRange, x => x.toFixed(0))}) ` +
        `vs ${d.mbPerSec.toFixed(0)} MB/s (${range(d.mbPerSecRange, x => x.toFixed(0)).slice(2) || '1 run'}) = ${fmt.ratio(r.vsDirect)}: ${met(r.vsDirect >= TARGETS.ratio)}`)
    }
    if (r.concurrency === maxC) {
      const perRun = (r.runs ?? [r]).filter(x => !x.error).map(x => `${Math.round((x.rssAtStartBytes ?? 0) / MiB)}→${Math.round(x.peakRssBytes / MiB)}`).join(', ')
      notes.push(`target peak RSS ≤ 150 MB (${fmt.mib(TARGETS.rssBytes)}) with ${maxC} concurrent uploads: ${tag} ${fmt.mb(r.peakRssBytes)} (${fmt.mib(r.peakRssBytes)}, highest of ${n} run${n > 1 ? 's' : ''}; ` +
        `RSS at start → peak per run: ${perRun} MiB): ${met(r.peakRssBytes <= TARGETS.rssBytes)}` +
        ` [the gateway's slab pool: ${Math.floor(r.bufferBytes / r.partSize)} × ${r.partSize / MiB} MiB (STORAGE_BUFFER_BYTES ${r.bufferBytes})${r.nodeArgs?.length ? `, node ${r.nodeArgs.join(' ')}` : ''};` +
        ` lib-storage's part buffers in the direct process: ${maxC} × ${r.partSize / MiB} MiB × (queue ${r.queueSize} + 1) = ${maxC * r.partSize * (r.queueSize + 1) / MiB} MiB, which peaked at ${fmt.mib(d?.peakRssBytes)}]`)
    }
    const starts = (r.runs ?? [r]).filter(x => !x.error && x.memoryAtStart?.heapTotal !== undefined)
    if (starts.length > 1) {
      const f = m => `RSS ${Math.round(m.rss / MiB)} (heap ${Math.round(m.heapUsed / MiB)}/${Math.round(m.heapTotal / MiB)}, external ${Math.round(m.external / MiB)})`
      notes.push(`${tag} ×${r.concurrency} idle memory at the start of each run, MiB: ${starts.map(x => f(x.memoryAtStart)).join(' → ')}: ` +
        'growth in the RSS alone is the allocator keeping freed pages (fragmentation); in the heap or external memory, something kept')
    }
    const l = lagMs(r)
    if (l !== undefined) {
      notes.push(`target event-loop p99 ≤ ${TARGETS.lagP99Ms} ms while hashing: ${tag} ${l.toFixed(1)} ms (${of}${range(r.lagP99Range, x => `${(Math.max(0, x - LAG_RESOLUTION_S) * 1000).toFixed(0)}`)} ms; ` +
        `nodejs_eventloop_lag_p99_seconds ${(r.lagP99Seconds * 1000).toFixed(1)} ms minus its 10 ms tick): ${met(l <= TARGETS.lagP99Ms)}` +
        (d && lagMs(d) !== undefined ? ` [direct-lib-storage's own loop, no hashing: ${lagMs(d).toFixed(1)} ms]` : ''))
    }
  }
  notes.push('event-loop p99: prom-client\'s monitorEventLoopDelay histogram (10 ms resolution) reports the time between its 10 ms ticks, so an idle loop reads ~10.1 ms; ' +
    'the column shows that minus 10 ms, i.e. how late the loop ran its timers; sampled once per tick, it is reset by each /metrics scrape (the first tick after it is not recorded), ' +
    'so blocks shorter than a tick count as at most their length and the figure covers the upload window only; raw figures in the JSON (lag)')
  return notes
}

/** Annotates the rows and returns the scenario's closing notes. */
export function readRows (rows, ctx, maxC) {
  annotate(rows, ctx)
  return verdicts(rows, maxC)
}

export const COLUMNS = [
  { title: 'target', get: r => r.label, align: 'left' },
  { title: 'part/queue', get: r => (r.partSize ? `${r.partSize / MiB} MiB/${r.queueSize}` : '-') },
  { title: 'concurrency', get: r => String(r.concurrency ?? '-') },
  { title: 'MB/s', get: r => (r.mbPerSec === undefined ? '-' : r.mbPerSec.toFixed(1)) },
  { title: 'ratio', get: r => (r.baseline ? (r.error ? '-' : '1.00×') : fmt.ratio(r.vsDirect)) },
  { title: 'peak RSS', get: r => fmt.mib(r.peakRssBytes) },
  { title: 'event-loop p99', get: r => { const l = lagMs(r); return l === undefined ? '-' : `${l.toFixed(1)} ms` } },
  { title: 'uploader CPU', get: r => fmt.pct(r.baseline ? r.uploaderCpu : r.serverCpu) },
  { title: 'client CPU', get: r => fmt.pct(r.clientCpu) },
  { title: 'MinIO CPU', get: r => fmt.pct(r.minioCpu) },
  { title: 'other CPU', get: r => fmt.pct(r.othersCpu) },
  STATUS_COLUMN
]

/** What the chart draws and `bench history` follows. */
export function figures (rows) {
  return figuresOf(rows, r => {
    const group = `${r.label} ×${r.concurrency}`
    return [
      figure(r, 'upload throughput', 'MB/s', group, 'MB/s', r.mbPerSec),
      figure(r, 'peak RSS of the uploader', 'MiB', group, 'peak RSS', r.peakRssBytes / MiB),
      figure(r, 'event-loop p99 (minus its 10 ms tick)', 'ms', group, 'p99', lagMs(r))
    ]
  })
}
