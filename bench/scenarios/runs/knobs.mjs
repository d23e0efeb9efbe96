// The runs scenario's settings (BENCH_RUNS_*), its request, its targets.
import { intEnv, listEnv, UsageError } from '../../lib/env.mjs'
import { gateway, baseline } from '../../lib/targets.mjs'
import { listeningLine, tempDir } from '../../lib/procs.mjs'

export const PHASES = ['throughput', 'delivery', 'capacity']
export const REQUEST = { method: 'POST', path: '/runs:start', body: { message: 'hello', mode: 'echo' }, expectStatus: s => s === 202 }

export { RUNS_TARGETS as TARGETS } from '../../lib/goals.mjs'

/** "10x2": runs in flight × streams per run; empty or 0: no light load point. */
function lightLoad (raw) {
  const v = raw.trim()
  if (v === '' || v === '0') return undefined
  const m = /^(\d+)\s*[x×]\s*(\d+)$/.exec(v)
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) throw new UsageError(`BENCH_RUNS_SSE_LIGHT must look like 10x2 (runs in flight x streams per run) or be empty, got ${JSON.stringify(raw)}`)
  return { concurrency: Number(m[1]), subscribers: Number(m[2]) }
}

export function knobs () {
  const phases = listEnv('BENCH_RUNS_PHASES', PHASES)
  const bad = phases.filter(p => !PHASES.includes(p))
  if (bad.length) throw new UsageError(`BENCH_RUNS_PHASES: unknown ${bad.join(', ')} (known: ${PHASES.join(', ')})`)
  const levels = listEnv('BENCH_RUNS_SUBSCRIBERS', ['1000', '5000', '10000']).map(Number)
  if (levels.some(n => !Number.isInteger(n) || n < 1) || levels.some((n, i) => i > 0 && n <= levels[i - 1])) throw new UsageError('BENCH_RUNS_SUBSCRIBERS must list increasing integers, e.g. 1000,5000,10000')
  return {
    phases,
    roles: process.env.BENCH_RUNS_ROLES || 'harness',
    nofile: intEnv('BENCH_RUNS_NOFILE', 65536, 1024),
    drainWaitS: intEnv('BENCH_RUNS_DRAIN_WAIT', 30, 1),
    sse: {
      concurrency: intEnv('BENCH_RUNS_SSE_CONCURRENCY', 50, 1),
      subscribers: intEnv('BENCH_RUNS_SSE_SUBSCRIBERS', 4, 1),
      steps: intEnv('BENCH_RUNS_SSE_STEPS', 200, 1),
      delayMs: intEnv('BENCH_RUNS_SSE_DELAY_MS', 5, 0),
      runs: intEnv('BENCH_RUNS_SSE_RUNS', 2000, 1),
      seconds: intEnv('BENCH_RUNS_SSE_SECONDS', 60, 1)
    },
    light: lightLoad(process.env.BENCH_RUNS_SSE_LIGHT ?? '10x2'),
    cap: {
      levels,
      runs: intEnv('BENCH_RUNS_CAP_RUNS', 100, 1),
      delayMs: intEnv('BENCH_RUNS_CAP_DELAY_MS', 1000, 1),
      holdMs: intEnv('BENCH_RUNS_HOLD_MS', 5000, 0),
      batch: intEnv('BENCH_RUNS_CONNECT_BATCH', 250, 1)
    }
  }
}

/**
 * The streams the client holds at once at the scenario's largest load point, plus room for the
 * throughput phase's API check: the bench's one tenant must not meet HARNESS_MAX_STREAMS(_PER_TENANT),
 * whose defaults (5,000 and 100) are below 50 × 4 and 10,000.
 */
function streamLimit (k) {
  const points = [k.sse, ...(k.light ? [k.light] : [])].map(p => p.concurrency * p.subscribers)
  return String(Math.max(...points, ...k.cap.levels) + 100)
}

/** The gateway with only the harness role (BENCH_RUNS_ROLES), on a fresh DATA_DIR; stream limits from the shell win. */
export function gatewayTarget (k, { label = 'gateway', logLevel } = {}) {
  const streams = streamLimit(k)
  const env = {
    ROLES: k.roles,
    HARNESS_MAX_STREAMS: process.env.HARNESS_MAX_STREAMS ?? streams,
    HARNESS_MAX_STREAMS_PER_TENANT: process.env.HARNESS_MAX_STREAMS_PER_TENANT ?? streams
  }
  const t = gateway({ label, logLevel, nofile: k.nofile, listenOn: 'harnessPort', env })
  return { ...t, start: async ctx => ({ ...await t.start(ctx), persisted: true, api: true }) }
}

/**
 * bench/baselines/runs-uws.mjs in `mode` (bare, lmdb-put, lmdb-run, memory, lmdb-sse).
 * `api`: serves GET /runs/{id} and its stream. `persisted`: its LMDB holds whole runs and their bus
 * messages, as throughput's reader checks them; not lmdb-sse (no bus, its API forgets ended runs after 5 s).
 */
export function baselineTarget (k, label, mode) {
  const t = baseline({
    label,
    script: 'runs-uws.mjs',
    nofile: k.nofile,
    ready: listeningLine('runs-uws listening'),
    env: () => ({ MODE: mode, ...(mode.startsWith('lmdb') ? { DATA_DIR: tempDir('bench-runs-data-') } : {}) })
  })
  return { ...t, start: async ctx => { const s = await t.start(ctx); return { ...s, dataDir: s.env.DATA_DIR, mode, persisted: mode === 'lmdb-run', api: mode === 'memory' || mode === 'lmdb-sse' } } }
}
