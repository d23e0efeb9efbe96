// The runner's settings (BENCH_* variables, see bench/README.md) and the
// headline that states them above each table.
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { hasTaskset } from './procs.mjs'
import { intEnv, listEnv, UsageError } from './env.mjs'
import { BENCH_DIR } from './paths.mjs'

export function readSettings () {
  const nproc = availableParallelism()
  const pinWanted = !['0', 'false', 'no', 'off'].includes((process.env.BENCH_PIN ?? '1').toLowerCase())
  const serverCpu = intEnv('BENCH_SERVER_CPU', 0, 0)
  const wrkCpu = intEnv('BENCH_WRK_CPU', 1, 0)
  let pin = pinWanted
  let pinNote
  if (!pinWanted) pinNote = 'not pinned: BENCH_PIN=0'
  else if (!hasTaskset()) { pin = false; pinNote = 'not pinned: no taskset (apt-get install util-linux)' }
  else if (nproc < 2) { pin = false; pinNote = 'not pinned: 1 CPU, server and wrk share it' }
  else if (serverCpu === wrkCpu || serverCpu >= nproc || wrkCpu >= nproc) throw new UsageError(`BENCH_SERVER_CPU (${serverCpu}) and BENCH_WRK_CPU (${wrkCpu}) must differ and be < ${nproc}`)
  const cpuProf = (process.env.BENCH_CPU_PROF ?? '').trim()
  const settings = {
    duration: intEnv('BENCH_DURATION', 10, 1),
    warmup: intEnv('BENCH_WARMUP', 2, 0),
    connections: intEnv('BENCH_CONNECTIONS', 50, 1),
    threads: intEnv('BENCH_THREADS', 1, 1),
    wrkTimeout: intEnv('BENCH_TIMEOUT', 2, 1),
    pin,
    pinNote,
    serverCpu: pin ? serverCpu : undefined,
    wrkCpu: pin ? wrkCpu : undefined,
    logLevel: process.env.BENCH_LOG_LEVEL || 'info',
    targets: listEnv('BENCH_TARGETS'),
    cpuProf: cpuProf !== '' && cpuProf !== '0',
    cpuProfTargets: ['', '0', '1', 'true', 'all'].includes(cpuProf) ? [] : cpuProf.split(',').map(s => s.trim()),
    resultsDir: process.env.BENCH_RESULTS_DIR || join(BENCH_DIR, 'results'),
    // Other processes using more than this share of a core during a run get a note.
    busyThreshold: 0.1
  }
  if (settings.threads > settings.connections) throw new UsageError('BENCH_THREADS must not exceed BENCH_CONNECTIONS (wrk needs a connection per thread)')
  return settings
}

/** "scenario health — GET /health, 50 connections, 10 s (+2 s warm-up), ... LOG_LEVEL=info" */
export function headline (scenario, settings) {
  const s = settings
  const where = s.pin ? `server CPU${s.serverCpu}, wrk CPU${s.wrkCpu}` : s.pinNote
  const what = typeof scenario.headline === 'function'
    ? scenario.headline(settings)
    : scenario.headline ?? (scenario.request && typeof scenario.request === 'object' ? `${scenario.request.method ?? 'GET'} ${scenario.request.path}` : scenario.description)
  const load = `${s.connections} connections, ${s.duration} s (+${s.warmup} s warm-up), ${s.threads} wrk thread${s.threads === 1 ? '' : 's'}`
  return `scenario ${scenario.name} — ${what}, ${load} (${where}), LOG_LEVEL=${s.logLevel}`
}
