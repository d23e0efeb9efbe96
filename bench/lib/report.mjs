// The table on stdout, the JSON file in bench/results/, machine facts.
import { cpus, totalmem, release, availableParallelism, hostname } from 'node:os'
import { readFileSync, mkdirSync, writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { REPO_DIR } from './paths.mjs'
import { wrkVersion } from './wrk.mjs'
import { fmt } from './format.mjs'
import { statusOf } from './verdicts.mjs'

export const STATUS_COLUMN = { title: 'status', get: statusOf, align: 'left' }

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
  STATUS_COLUMN
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

/** The uWS build this runtime loads (src/http/uws.ts), when dist/ is built. */
const uws = await import('../../dist/http/uws.js').then(m => m.loadUws(true).build, () => undefined)

let machineInfo
export function machine () {
  if (machineInfo) return machineInfo
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

/** bench/results/<scenario>-<ISO timestamp with ':' as '-'>.<ext> */
export function resultFile (dir, scenarioName, startedAt, ext) {
  mkdirSync(dir, { recursive: true })
  return join(dir, `${scenarioName}-${startedAt.toISOString().replace(/:/g, '-')}.${ext}`)
}

/** Writes `data` as JSON to resultFile(...); returns the file. */
export function writeResult (dir, scenarioName, startedAt, data) {
  const file = resultFile(dir, scenarioName, startedAt, 'json')
  writeFileSync(file, JSON.stringify(data, null, 2) + '\n')
  return file
}
