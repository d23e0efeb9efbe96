// What the load tool shows: a progress line each second on stderr while it
// runs, then a report: a table on stdout, the JSON and an SVG chart in the
// results folder.
import { writeFileSync } from 'node:fs'
import { table, resultFile, writeResult, machine } from '../lib/report.mjs'
import { fmt } from '../lib/format.mjs'
import { figure, runChart } from '../lib/figures.mjs'
import { formatStatuses } from '../lib/logs.mjs'
import { writeHdrLog } from './hdr.mjs'
import { checkThresholds } from './plan.mjs'

const PERCENTILES = [['p50', 'p50'], ['p90', 'p90'], ['p99', 'p99'], ['p99.9', 'p999']]

/** "load 3.0/10 s  sent 300 (100/s)  in flight 2  p50 1.23 ms  p99 4.56 ms  not ok: 401×1", the figures since the last line. */
export function progressLine (rec, o, elapsed) {
  const w = rec.window
  const secs = (performance.now() - w.since) / 1000
  const problems = formatStatuses(rec.problems())
  return `load ${elapsed.toFixed(1)}/${o.duration} s  sent ${Object.values(rec.kinds).reduce((a, k) => a + k.sent, 0)} (${Math.round(w.sent / secs)}/s)  ` +
    `in flight ${rec.inFlight}  p50 ${fmt.ms(w.latency.percentile(50))} ms  p99 ${fmt.ms(w.latency.percentile(99))} ms` +
    (problems ? `  not ok: ${problems}` : '')
}

/** Per kind and for all: counts and latency percentiles (ms, from the due time to the end of the answer). */
function summary (rec) {
  const kinds = Object.fromEntries(Object.entries(rec.kinds).map(([name, k]) => [name, {
    sent: k.sent, answered: k.answered, ok: k.ok, notSent: k.notSent, statuses: k.statuses, errors: k.errors, examples: k.examples, latencyMs: k.latency.stats()
  }]))
  const sum = key => Object.values(rec.kinds).reduce((a, k) => a + k[key], 0)
  const all = { sent: sum('sent'), answered: sum('answered'), ok: sum('ok'), notSent: sum('notSent'), latencyMs: rec.latency.stats() }
  return { kinds, all }
}

/** Rates and latency percentiles per kind and for all: the chart's bars, what history follows. */
function figures (s, seconds) {
  return [...Object.entries(s.kinds), ['all', s.all]].flatMap(([name, k]) => {
    const row = { label: name, problems: k.ok < k.sent + k.notSent ? ['not every request succeeded'] : [] }
    return [
      figure(row, 'rate', 'req/s', name, 'sent', k.sent / seconds),
      figure(row, 'rate', 'req/s', name, 'answered with success', k.ok / seconds),
      ...PERCENTILES.map(([label, key]) => figure(row, 'latency from the due time', 'ms', name, label, k.latencyMs[key]))
    ]
  }).filter(Boolean)
}

function perSecondPanels (rec) {
  const x = rec.perSecond.map((_, i) => `${i + 1}`)
  return [
    { kind: 'lines', title: 'each second of the run: requests', unit: 'per s', x, series: [{ name: 'sent', values: rec.perSecond.map(s => s.sent) }, { name: 'answered with success', values: rec.perSecond.map(s => s.ok) }, { name: 'not ok', values: rec.perSecond.map(s => s.bad) }] },
    { kind: 'lines', title: 'each second of the run: latency from the due time', unit: 'ms', x, series: [{ name: 'p50', values: rec.perSecond.map(s => s.latency.percentile(50)) }, { name: 'p99', values: rec.perSecond.map(s => s.latency.percentile(99)) }] }
  ]
}

/** The counts under `key` of every kind, added up. */
function merged (kinds, key) {
  const out = {}
  for (const k of Object.values(kinds)) for (const [name, n] of Object.entries(k[key])) out[name] = (out[name] ?? 0) + n
  return out
}

const COLUMNS = [
  { title: 'kind', get: ([name]) => name, align: 'left' },
  { title: 'sent', get: ([, k]) => fmt.count(k.sent) },
  { title: 'ok', get: ([, k]) => fmt.count(k.ok) },
  { title: 'p50 ms', get: ([, k]) => fmt.ms(k.latencyMs.p50) },
  { title: 'p90 ms', get: ([, k]) => fmt.ms(k.latencyMs.p90) },
  { title: 'p99 ms', get: ([, k]) => fmt.ms(k.latencyMs.p99) },
  { title: 'p99.9 ms', get: ([, k]) => fmt.ms(k.latencyMs.p999) },
  { title: 'max ms', get: ([, k]) => fmt.ms(k.latencyMs.max) },
  { title: 'statuses and errors', get: ([, k]) => formatStatuses({ ...k.statuses, ...k.errors, ...(k.notSent ? { 'not sent': k.notSent } : {}) }) || '-', align: 'left' }
]

/**
 * Writes the JSON and the SVG, prints the table and notes; returns the exit
 * code: 0 when every due request was sent and answered with success.
 */
export function report ({ o, rec, run, startedAt, elapsedSeconds, session, interrupted }) {
  const s = summary(rec)
  const seconds = Math.max(elapsedSeconds, 1e-3)
  const lag = rec.sendLag.stats()
  const mixText = Object.entries(o.mix).map(([k, w]) => `${k}=${w}`).join(',')
  const pace = o.stages === undefined ? `at ${o.rate} req/s for ${o.duration} s` : `in stages ${o.stages.map(st => `${st.seconds}s:${st.rate}`).join(',')}`
  const headline = `load — ${o.url} ${pace}, open loop, mix ${mixText}, ${o.connections} connections` +
    (o.mix.evidence ? `, ${o.mediaBytes}-byte media` : '')
  const figs = figures(s, seconds)
  const notes = [
    `latency: from the time each request was due on the timeline to the end of its answer, every answer counted (any status); ${run.scheduled} of ${run.total} requests were due${interrupted ? ' (interrupted)' : ''}`,
    `${s.all.sent} requests sent over ${seconds.toFixed(1)} s (${(s.all.sent / seconds).toFixed(1)}/s), ${s.all.ok} answered with success`,
    `the tool's own lateness against the timeline: p99 ${fmt.ms(lag.p99)} ms, max ${fmt.ms(lag.max)} ms` + (lag.p99 > 10 ? ' (high: the tool could not keep up, its figures include its own delay; run fewer requests per process)' : ''),
    ...session.relogins().map(r => `logged in again at ${r.at} after a 401${r.ok ? '' : `: failed, ${r.error}`}`),
    ...(run.unfinished ? [`${run.unfinished} requests were still unanswered ${o.timeout + 5} s after the last was sent`] : []),
    ...Object.entries(s.kinds).flatMap(([name, k]) => Object.entries(k.examples).map(([st, ex]) => `${name} ${st}, e.g. ${ex[0]}`))
  ]
  const data = {
    scenario: 'load',
    description: 'npm run bench load: a fixed rate against a deployment',
    headline,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    settings: { url: o.url, authUrl: o.authUrl, clientId: o.clientId, audience: o.audience, rate: o.rate, duration: o.duration, stages: o.stages, thresholds: o.thresholds.map(t => t.text), body: o.body === undefined ? undefined : 'file', bodyModule: o.bodyModule, mix: o.mix, connections: o.connections, timeoutSeconds: o.timeout, mediaBytes: o.mediaBytes, assets: o.assets, maxInFlight: o.maxInFlight },
    runId: run.runId,
    client: machine(),
    interrupted,
    unfinished: run.unfinished,
    results: s,
    sendLagMs: lag,
    relogins: session.relogins(),
    perSecond: rec.perSecond.map(x => ({ sent: x.sent, ok: x.ok, bad: x.bad, latencyMs: x.latency.stats() })),
    notes,
    figures: figs
  }
  const all = rec.latency.stats()
  const thresholds = checkThresholds(o.thresholds, { latency: { percentile: p => rec.latency.percentile(p), avg: all.avg, max: all.max }, due: run.total, ok: s.all.ok, seconds })
  data.thresholds = thresholds
  const file = writeResult(o.out, 'load', startedAt, data)
  const hdrLog = resultFile(o.out, 'load', startedAt, 'hlog')
  writeHdrLog(hdrLog, rec.perSecond, startedAt, `${headline}; run ${run.runId}`)
  const chart = resultFile(o.out, 'load', startedAt, 'svg')
  writeFileSync(chart, runChart({ title: headline, subtitle: [`${startedAt.toISOString()}, run ${run.runId}; latency from the due time to the end of the answer`], figures: figs, more: perSecondPanels(rec) }))
  process.stdout.write([
    '', headline,
    table(COLUMNS, [...Object.entries(s.kinds), ['all', { ...s.all, statuses: merged(s.kinds, 'statuses'), errors: merged(s.kinds, 'errors') }]]),
    ...notes.map(n => `note: ${n}`),
    ...thresholds.map(t => `threshold ${t.passed ? 'held' : 'CROSSED'}: ${t.threshold} (measured ${+t.actual.toFixed(6)}${t.metric === 'errors' ? ' of the requests' : t.metric === 'rate' ? '/s' : ' ms'})`),
    `results: ${file}`, `chart: ${chart}`, `hdr log: ${hdrLog}`
  ].join('\n') + '\n')
  const clean = s.all.ok === run.total && !interrupted
  // With thresholds they decide, as in k6: a run may allow some errors.
  const passed = o.thresholds.length > 0 ? thresholds.every(t => t.passed) && !interrupted : clean
  // The last line: one JSON object a CI job reads (jq 'select(.verdict)' or the last line).
  process.stdout.write(JSON.stringify({
    verdict: passed ? 'pass' : 'fail',
    thresholds,
    requests: { due: run.total, sent: s.all.sent, ok: s.all.ok, notSent: s.all.notSent, interrupted },
    ratePerSecond: +(s.all.ok / seconds).toFixed(3),
    latencyMs: s.all.latencyMs,
    files: { json: file, chart, hdrLog }
  }) + '\n')
  return passed ? 0 : 1
}
