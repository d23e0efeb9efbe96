// A run's figures: the numbers its chart draws and `npm run bench history`
// follows across runs, each one { panel, unit, group, series, value }
// (e.g. latency / ms / gateway / p99 / 2.6). A scenario names its own with
// `figures(rows)`; rows of wrk runs get req/s and latency percentiles.
import { writeFileSync } from 'node:fs'
import { chartSvg } from './svg.mjs'
import { isClean } from './verdicts.mjs'
import { resultFile } from './report.mjs'

/** One figure of `row` (undefined when the value is missing), marked as its row is: baseline, flagged. */
export function figure (row, panel, unit, group, series, value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return undefined
  return { panel, unit, group, series, value, baseline: row.baseline || undefined, flagged: !isClean(row) || undefined }
}

/** The figures of `rows` by `pick(row)` → [figure...], rows that failed left out. */
export const figuresOf = (rows, pick) => rows.filter(r => !r.error).flatMap(pick).filter(Boolean)

/** req/s, then latency p50/p75/p90/p99 of each wrk row. */
export function wrkFigures (rows) {
  return figuresOf(rows, r => [
    figure(r, 'throughput', 'req/s', r.label, 'req/s', r.reqPerSec),
    ...['p50', 'p75', 'p90', 'p99'].map(p => figure(r, 'latency', 'ms', r.label, p, r.latencyMs?.[p]))
  ])
}

/** The name history follows a figure by. */
export const figureKey = f => `${f.panel} / ${f.group} / ${f.series}`

/** A bars panel per panel of `figures`, groups and series in the order they come. */
export function barPanels (figures) {
  const panels = new Map()
  for (const f of figures) {
    const key = `${f.panel}|${f.unit}`
    if (!panels.has(key)) panels.set(key, { kind: 'bars', title: f.panel, unit: f.unit, groups: new Map() })
    const groups = panels.get(key).groups
    if (!groups.has(f.group)) groups.set(f.group, { label: f.group, baseline: f.baseline, bars: [] })
    groups.get(f.group).bars.push({ series: f.series, value: f.value, flagged: f.flagged })
  }
  return [...panels.values()].map(p => ({ ...p, groups: [...p.groups.values()] }))
}

/** One run's chart: its figures as bars under a title; `more` panels after them. */
export const runChart = ({ title, subtitle, figures, more = [] }) => chartSvg({ title, subtitle, panels: [...barPanels(figures), ...more] })

/**
 * The chart of a saved run, from the JSON the runner writes: its figures
 * under its headline, the commit and machine, and warnings for flagged rows
 * and rows measured while other processes took CPU (`threshold` of a core).
 */
export function resultChart (data, threshold = 0.1) {
  const m = data.machine ?? {}
  const rows = data.results ?? []
  const noisy = rows.filter(r => r.othersCpu > threshold)
  const worst = Math.max(0, ...noisy.map(r => r.othersCpu))
  return runChart({
    title: `${data.scenario}: ${data.description}`,
    subtitle: [
      data.headline,
      `${data.startedAt}, commit ${m.gitCommit?.slice(0, 10) ?? '?'}${m.gitSrcDirty ? ' (src/ changed)' : ''}, ${m.nproc} CPUs (${m.cpuModel ?? '?'})` +
        (data.flagged?.length ? `; flagged (dashed): ${data.flagged.join(', ')}` : ''),
      ...(noisy.length ? [{ warn: true, text: `NOT a quiet machine: other processes took up to ${Math.round(worst * 100)}% of a core during ${[...new Set(noisy.map(r => r.label))].join(', ')}: figures low and noisy` }] : [])
    ],
    figures: data.figures
  })
}

/** Writes resultChart(data) beside the run's JSON (same name, .svg); returns the file. */
export function writeChart (dir, name, startedAt, data, threshold) {
  const file = resultFile(dir, name, startedAt, 'svg')
  writeFileSync(file, resultChart(data, threshold))
  return file
}
