// `npm run bench history [scenario...] [--last N]`: how each figure moved
// across the runs saved in bench/results/ (BENCH_RESULTS_DIR): a table per
// scenario on stdout, and an SVG line chart per figure in
// bench/results/history/<scenario>/. A figure is what a run's own chart
// draws (lib/figures.mjs); hollow points and `*` mark flagged rows.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { figureKey, wrkFigures } from './lib/figures.mjs'
import { chartSvg, short } from './lib/svg.mjs'
import { table } from './lib/report.mjs'
import { UsageError } from './lib/env.mjs'

const slug = s => s.toLowerCase().replace(/×/g, 'x').replace(/[^a-z0-9.@]+/g, '-').replace(/^-|-$/g, '')
const when = iso => iso.slice(5, 16).replace('T', ' ') // "11-23 01:32"

function parseArgs (argv) {
  const names = []
  let last = 8
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--last') {
      last = Number(argv[++i])
      if (!Number.isInteger(last) || last < 1) throw new UsageError('--last takes a whole number of runs, e.g. --last 8')
    } else if (argv[i].startsWith('-')) throw new UsageError(`history: unknown option ${argv[i]} (usage: npm run bench history [scenario...] [--last N])`)
    else names.push(argv[i])
  }
  return { names, last }
}

/**
 * The saved runs, oldest first: { name, startedAt, figures }. Runs saved
 * before figures were written get them from the scenario's current
 * `figures(rows)` (or the wrk default).
 */
function savedRuns (dir, scenarios) {
  const runs = []
  for (const f of existsSync(dir) ? readdirSync(dir).filter(f => f.endsWith('.json')) : []) {
    let data
    try { data = JSON.parse(readFileSync(join(dir, f), 'utf8')) } catch { continue }
    if (typeof data.scenario !== 'string' || typeof data.startedAt !== 'string') continue
    const pick = scenarios.find(s => s.name === data.scenario)?.figures ?? wrkFigures
    const figures = data.figures ?? (Array.isArray(data.results) ? pick(data.results) : [])
    const st = data.settings ?? {}
    const how = st.rate !== undefined ? `${st.rate}/s for ${st.duration} s` : `${st.duration} s, ${st.connections} connections`
    runs.push({ name: data.scenario, startedAt: data.startedAt, figures, how, file: f })
  }
  return runs.sort((a, b) => a.startedAt.localeCompare(b.startedAt))
}

/** Each figure of `runs` (one scenario's) with its value in every run: [{ key, unit, values, flagged }]. */
function series (runs) {
  const byKey = new Map()
  runs.forEach((run, i) => {
    for (const f of run.figures) {
      const key = figureKey(f)
      if (!byKey.has(key)) byKey.set(key, { key, panel: f.panel, unit: f.unit, values: new Array(runs.length).fill(undefined), flagged: new Array(runs.length).fill(false) })
      byKey.get(key).values[i] = f.value
      byKey.get(key).flagged[i] = Boolean(f.flagged)
    }
  })
  return [...byKey.values()]
}

function change (values) {
  const seen = values.filter(v => v !== undefined)
  if (seen.length < 2 || !seen[0]) return '-'
  const c = (seen.at(-1) / seen[0] - 1) * 100
  return `${c >= 0 ? '+' : ''}${c.toFixed(0)}%`
}

function scenarioHistory (name, runs, { last, outDir }) {
  const all = series(runs)
  const dir = join(outDir, name)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const x = runs.map(r => when(r.startedAt))
  for (const s of all) {
    const svg = chartSvg({
      title: `${name}: ${s.key}`,
      subtitle: [`${runs.length} saved run${runs.length === 1 ? '' : 's'}, ${runs[0].startedAt.slice(0, 16)} to ${runs.at(-1).startedAt.slice(0, 16)} (UTC); hollow: the row was flagged`],
      panels: [{ kind: 'lines', title: s.key, unit: s.unit, x, series: [{ name: s.key, values: s.values, flagged: s.flagged }] }]
    })
    writeFileSync(join(dir, `${slug(s.key)}.svg`), svg)
  }
  const shown = runs.map((r, i) => i).slice(-last)
  const columns = [
    { title: 'figure', get: s => s.key, align: 'left' },
    { title: 'unit', get: s => s.unit, align: 'left' },
    ...shown.map(i => ({ title: x[i], get: s => (s.values[i] === undefined ? '-' : short(s.values[i]) + (s.flagged[i] ? '*' : '')) })),
    { title: 'first→last', get: s => change(s.values) }
  ]
  const from = runs.length > last ? ` (the last ${last} shown; first→last over all ${runs.length})` : ''
  const hows = new Set(runs.map(r => r.how))
  const mixed = hows.size > 1 ? `\nnote: the runs were measured with different settings, compare with care: ${shown.map(i => `${x[i]} ${runs[i].how}`).join('; ')}` : ''
  return `history of ${name}: ${runs.length} run${runs.length === 1 ? '' : 's'}${from}, charts in ${dir}/\n${table(columns, all)}${mixed}`
}

export function history (argv, { resultsDir, scenarios }) {
  const { names, last } = parseArgs(argv)
  const runs = savedRuns(resultsDir, scenarios)
  const byName = new Map()
  for (const r of runs) if (names.length === 0 || names.includes(r.name)) byName.set(r.name, [...(byName.get(r.name) ?? []), r])
  if (byName.size === 0) {
    process.stdout.write(`no saved runs${names.length ? ` of ${names.join(', ')}` : ''} in ${resultsDir}: run a scenario first (npm run bench <scenario>)\n`)
    return 0
  }
  const outDir = join(resultsDir, 'history')
  const parts = [...byName].map(([name, rs]) => scenarioHistory(name, rs, { last, outDir }))
  process.stdout.write(parts.join('\n\n') + '\n(* the row was flagged in that run: errors, non-2xx answers or a failed target)\n')
  return 0
}
