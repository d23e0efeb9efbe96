// The table on stdout, the JSON file in bench/results/, machine facts.
import { cpus, totalmem, release, availableParallelism, hostname } from 'node:os'
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { REPO_DIR } from './targets.mjs'
import { wrkVersion } from './wrk.mjs'

const MiB = 1024 * 1024
const fixed = (digits) => v => (v === undefined || v === null || Number.isNaN(v) ? '-' : v.toFixed(digits))
export const fmt = {
  int: v => (v === undefined || v === null ? '-' : String(Math.round(v))),
  ms: fixed(2),
  mib: v => (v === undefined || v === null ? '-' : `${Math.round(v / MiB)} MiB`),
  pct: v => (v === undefined || v === null ? '-' : `${Math.round(v * 100)}%`),
  ratio: v => (v === undefined || v === null ? '-' : `${v.toFixed(2)}×`)
}

/** Columns of a wrk-based scenario; a scenario with its own run() may return others. */
export const WRK_COLUMNS = [
  { title: 'target', get: r => r.label, align: 'left' },
  { title: 'req/s', get: r => fmt.int(r.reqPerSec) },
  { title: 'p50 ms', get: r => fmt.ms(r.latencyMs?.p50) },
  { title: 'p99 ms', get: r => fmt.ms(r.latencyMs?.p99) },
  { title: 'peak RSS', get: r => fmt.mib(r.peakRssBytes) },
  { title: 'srv CPU', get: r => fmt.pct(r.serverCpu) },
  { title: 'wrk CPU', get: r => fmt.pct(r.wrkCpu) },
  { title: 'other CPU', get: r => fmt.pct(r.othersCpu) },
  { title: 'vs baseline', get: r => fmt.ratio(r.vsBaseline) },
  { title: 'status', get: r => (r.error ? 'FAILED' : r.problems?.length ? 'FLAGGED' : 'ok'), align: 'left' }
]

export function table (columns, rows) {
  const cells = rows.map(r => columns.map(c => String(c.get(r))))
  const widths = columns.map((c, i) => Math.max(c.title.length, ...cells.map(row => row[i].length)))
  const line = values => values.map((v, i) => (columns[i].align === 'left' ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('   ').trimEnd()
  return [line(columns.map(c => c.title)), ...cells.map(line)].join('\n')
}

function sh (cmd, args) {
  try { return execFileSync(cmd, args, { cwd: REPO_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() } catch { return undefined }
}

let machineInfo
export function machine () {
  if (machineInfo) return machineInfo
  let uws
  try { uws = JSON.parse(readFileSync(join(REPO_DIR, 'node_modules', 'uWebSockets.js', 'package.json'), 'utf8')).version } catch {}
  let governor
  try { governor = readFileSync('/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor', 'utf8').trim() } catch {}
  const commit = sh('git', ['rev-parse', 'HEAD'])
  const dirty = sh('git', ['status', '--porcelain', '--', 'src', 'package.json', 'package-lock.json'])
  machineInfo = {
    hostname: hostname(),
    nproc: availableParallelism(),
    onlineCpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memTotalBytes: totalmem(),
    kernel: release(),
    cpuGovernor: governor,
    node: process.version,
    uws,
    wrk: wrkVersion(),
    gitCommit: commit,
    gitSrcDirty: dirty === undefined ? undefined : dirty.length > 0
  }
  return machineInfo
}

/** bench/results/<scenario>-<ISO timestamp with ':' as '-'>.json */
export function writeResult (dir, scenarioName, startedAt, data) {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${scenarioName}-${startedAt.toISOString().replace(/:/g, '-')}.json`)
  writeFileSync(file, JSON.stringify(data, null, 2) + '\n')
  return file
}
