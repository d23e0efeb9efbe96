#!/usr/bin/env node
// Benchmark runner: `npm run bench [scenario...|all]` (see bench/README.md).
//
// A scenario is bench/scenarios/<name>.mjs whose default export is either
//
//   declarative: { name, description, targets: [{ label, kind?, start(ctx) → server, request? }],
//                  baseline?: label, request: { method, path, headers?, body?, lua?, expectStatus? }
//                                   | async (server, ctx) → request }
//     The runner starts each target in turn (never two at once), probes it with
//     one request, warms it up, measures it with wrk, stops it.
//
//   imperative:  { name, description, headline?, run: async ctx → { rows, columns?, compareBy?, notes? } }
//     For scenarios that are not "one request in a loop" (evidence uploads
//     measuring MB/s, multi-step runs). ctx (lib/context.mjs) offers start,
//     stop, measure, wrk, sample, probe, settings, tmpDir, log, warn.
//
// Rows are printed as a table and written with the settings and machine facts
// to bench/results/<scenario>-<timestamp>.json. Exit code 1 when any row is
// flagged (errors, non-2xx responses, a failed target), 2 on bad usage.
import { readdirSync, existsSync } from 'node:fs'
import { join, basename } from 'node:path'
import { pathToFileURL } from 'node:url'
import { installCleanupHandlers, pinSelf, interrupted } from './lib/procs.mjs'
import { ensureWrk } from './lib/wrk.mjs'
import { createContext, runDeclarative } from './lib/context.mjs'
import { WRK_COLUMNS, table, machine, writeResult } from './lib/report.mjs'
import { wrkFigures, writeChart } from './lib/figures.mjs'
import { summarizeProfile, formatProfile } from './lib/profile.mjs'
import { sampleSystem } from './lib/sampler.mjs'
import { readSettings, headline } from './lib/settings.mjs'
import { UsageError } from './lib/env.mjs'
import { history } from './history.mjs'
import { BENCH_DIR, REPO_DIR } from './lib/paths.mjs'

const SCENARIO_DIR = join(BENCH_DIR, 'scenarios')
const log = line => process.stderr.write(line + '\n')
const warn = line => process.stderr.write(`bench: warning: ${line}\n`)

async function loadScenarios () {
  const files = existsSync(SCENARIO_DIR) ? readdirSync(SCENARIO_DIR).filter(f => f.endsWith('.mjs')).sort() : []
  const scenarios = []
  for (const file of files) {
    const name = basename(file, '.mjs')
    try {
      const mod = await import(pathToFileURL(join(SCENARIO_DIR, file)).href)
      const s = mod.default ?? mod
      if (typeof s.run !== 'function' && !Array.isArray(s.targets)) throw new Error('exports neither run(ctx) nor targets')
      scenarios.push({ ...s, name: s.name ?? name, file })
    } catch (err) {
      scenarios.push({ name, file, loadError: err.message })
    }
  }
  return scenarios
}

function usage (scenarios) {
  const width = Math.max(8, ...scenarios.map(s => s.name.length))
  return [
    'usage: npm run bench <scenario>...   run scenarios (bench/scenarios/<name>.mjs)',
    '       npm run bench all             run every scenario',
    '       npm run bench history [scenario...] [--last N]   how each figure moved across the saved runs',
    '       npm run bench report [--check]   the README\'s benchmark table and bench/RESULTS.md from the newest saved runs',
    '       npm run bench load -- --url <base> --client-id <id> --client-secret <secret> [...]',
    '                                     drive any deployment at a fixed rate (--help for the options)',
    '',
    'scenarios:',
    ...scenarios.map(s => `  ${s.name.padEnd(width)}  ${s.loadError ? `(cannot load: ${s.loadError})` : s.description ?? ''}`),
    '',
    'knobs (env): BENCH_DURATION=10 BENCH_WARMUP=2 BENCH_CONNECTIONS=50 BENCH_THREADS=1 BENCH_TIMEOUT=2',
    '             BENCH_PIN=1 BENCH_SERVER_CPU=0 BENCH_WRK_CPU=1 BENCH_LOG_LEVEL=info BENCH_TARGETS=a,b',
    '             BENCH_CPU_PROF=1|label,... BENCH_RESULTS_DIR=bench/results   (see bench/README.md)'
  ].join('\n')
}

async function runScenario (scenario, settings) {
  const startedAt = new Date()
  settings = { ...settings, stamp: startedAt.toISOString().replace(/:/g, '-') }
  log(`\n== ${scenario.name}: ${scenario.description ?? ''}`)
  const ctx = createContext(scenario, settings, { log, warn })
  let out
  try {
    out = typeof scenario.run === 'function' ? await scenario.run(ctx) : await runDeclarative(scenario, ctx)
  } catch (err) {
    out = { rows: [], error: err.message }
    warn(`${scenario.name}: ${err.stack ?? err.message}`)
  } finally {
    await ctx.stopAll()
  }
  if (interrupted()) {
    log(`${scenario.name}: interrupted, no results written`)
    return false
  }
  const rows = out.rows ?? []

  // Ratio to the baseline row, by req/s unless the scenario says otherwise.
  const compareBy = out.compareBy ?? scenario.compareBy ?? 'reqPerSec'
  const baseLabel = scenario.baseline ?? rows.find(r => r.baseline)?.label ?? rows[0]?.label
  const base = rows.find(r => r.label === baseLabel)
  for (const r of rows) if (base?.[compareBy] && r[compareBy] !== undefined) r.vsBaseline = r[compareBy] / base[compareBy]

  const columns = out.columns ?? scenario.columns ?? WRK_COLUMNS
  const flagged = rows.filter(r => r.error || r.problems?.length)
  const title = headline(scenario, settings)
  const lines = ['', title, table(columns, rows)]
  for (const r of flagged) lines.push(`!! ${r.label}: ${r.problems?.join('; ') || r.error}`)
  if (out.error) lines.push(`!! scenario failed: ${out.error}`)
  for (const r of rows) for (const n of r.notes ?? []) lines.push(`note: ${r.label}: ${n}`)
  for (const n of out.notes ?? []) lines.push(`note: ${n}`)
  if (flagged.length) lines.push('!! flagged rows are not clean throughput figures: see the reasons above')

  const profiles = []
  for (const p of ctx.profiles) {
    for (const f of existsSync(p.dir) ? readdirSync(p.dir).filter(f => f.endsWith('.cpuprofile')) : []) {
      const file = join(p.dir, f)
      try {
        const summary = summarizeProfile(file, { repoDir: REPO_DIR, window: p.windows.length === 1 ? p.windows[0] : undefined })
        profiles.push({ label: p.label, file, summary })
        lines.push('', formatProfile(p.label, file, summary))
      } catch (err) { warn(`cannot read profile ${file}: ${err.message}`) }
    }
  }

  const { stamp, ...shownSettings } = settings
  const data = {
    scenario: scenario.name,
    description: scenario.description,
    headline: title,
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    settings: shownSettings,
    machine: machine(),
    baseline: baseLabel,
    compareBy,
    flagged: flagged.map(r => r.label),
    error: out.error,
    notes: out.notes,
    results: rows,
    figures: (scenario.figures ?? wrkFigures)(rows),
    profiles
  }
  const file = writeResult(settings.resultsDir, scenario.name, startedAt, data)
  const chart = writeChart(settings.resultsDir, scenario.name, startedAt, data, settings.busyThreshold)
  lines.push(`results: ${file}`, `chart: ${chart}`)
  process.stdout.write(lines.join('\n') + '\n')
  return flagged.length === 0 && !out.error
}

/** One second of /proc/stat before starting: is something else already using the CPUs? */
async function checkQuiet () {
  const sys = sampleSystem()
  await new Promise(resolve => setTimeout(resolve, 1000))
  const s = sys.stop()
  if (!s) return
  const others = s.busyCores - s.runnerCores
  if (others > 0.2) {
    warn(`the machine is busy before the run: other processes use ${Math.round(others * 100)}% of a core ` +
      `(per CPU: ${s.perCpuBusy.map(b => `${Math.round(b * 100)}%`).join(', ')}). Figures will be low and noisy.`)
  }
}

async function main (argv) {
  const [command, ...rest] = argv.filter(a => a !== '--')
  // The load tool runs against any deployment and handles its own signals (it reports on Ctrl-C).
  if (command === 'load') return (await import('./load/main.mjs')).load(rest)
  if (command === 'report') return (await import('./report.mjs')).report(rest, { resultsDir: process.env.BENCH_RESULTS_DIR || join(BENCH_DIR, 'results') })
  installCleanupHandlers()
  const scenarios = await loadScenarios()
  if (command === 'history') return history(rest, { resultsDir: process.env.BENCH_RESULTS_DIR || join(BENCH_DIR, 'results'), scenarios })
  const wanted = argv.filter(a => a !== '--')
  if (wanted.length === 0 || wanted.some(a => ['-h', '--help', 'help', 'list'].includes(a))) {
    process.stdout.write(usage(scenarios) + '\n')
    return 0
  }
  const chosen = wanted.includes('all') ? scenarios : wanted.map(n => scenarios.find(s => s.name === n) ?? n)
  const unknown = chosen.filter(s => typeof s === 'string')
  if (unknown.length) throw new UsageError(`unknown scenario ${unknown.join(', ')}\n\n${usage(scenarios)}`)
  const broken = chosen.filter(s => s.loadError)
  if (broken.length) throw new Error(broken.map(s => `scenario ${s.name} (${s.file}): ${s.loadError}`).join('\n'))

  const settings = readSettings()
  ensureWrk(log)
  machine() // before pinning: availableParallelism() follows the runner's own affinity
  if (settings.pin) pinSelf(settings.wrkCpu) // keep the runner itself off the server's CPU
  else warn(settings.pinNote)

  await checkQuiet()
  let ok = true
  for (const scenario of chosen) {
    if (interrupted()) break
    ok = (await runScenario(scenario, settings)) && ok
  }
  return ok ? 0 : 1
}

main(process.argv.slice(2)).then(code => { process.exitCode = code }, err => {
  process.stderr.write(`bench: ${err instanceof UsageError ? '' : 'error: '}${err.message}\n`)
  process.exitCode = err instanceof UsageError ? 2 : 1
})
