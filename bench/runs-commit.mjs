// What a run event's commit costs a live subscriber, with nothing else in the
// way: the gateway's RunManager, RunStore and RunHub in one process (built,
// from dist/), no HTTP, no SSE, no relay. RUNS_COMMIT_RUNS echo runs are kept
// in flight (RUNS_COMMIT_STEPS steps, RUNS_COMMIT_DELAY_MS apart) for
// RUNS_COMMIT_SECONDS; each event is timed from the moment the manager queues
// its write to the moment the hub hands it to a subscriber, and apart, to the
// moment its commit resolved. The environment is a temp dir under
// RUNS_COMMIT_DIR (default: the OS temp dir, like the bench's DATA_DIR; a
// tmpfs such as /dev/shm takes the disk's flush out), removed at the end.
//
//   npm run build && node bench/runs-commit.mjs
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { REPO_DIR } from './lib/paths.mjs'
import { quantile } from './lib/stats.mjs'

const num = (name, def) => (process.env[name] ? Number(process.env[name]) : def)
const RUNS = num('RUNS_COMMIT_RUNS', 10)
const STEPS = num('RUNS_COMMIT_STEPS', 200)
const DELAY_MS = num('RUNS_COMMIT_DELAY_MS', 5)
const SECONDS = num('RUNS_COMMIT_SECONDS', 15)

const dist = path => import(join(REPO_DIR, 'dist', path))
const { openState } = await dist('state/index.js')
const { RunHub } = await dist('runs/hub.js')
const { RunManager } = await dist('runs/manager.js')
const { echo } = await dist('runs/modes/echo.js')
const { RunStore } = await dist('runs/store.js')

const dir = mkdtempSync(join(process.env.RUNS_COMMIT_DIR ?? tmpdir(), 'runs-commit-'))
const state = openState(dir)
try {
  const store = new RunStore(state)
  const hub = new RunHub()
  const manager = new RunManager(store, hub, new Map([['echo', echo]]), { track () {}, add () {} }, pino({ level: 'silent' }))

  const queuedAt = new WeakMap()
  const committed = []
  const delivered = []
  const append = store.append.bind(store)
  store.append = (runId, event) => {
    const t0 = performance.now()
    queuedAt.set(event, t0)
    const stored = append(runId, event)
    stored.then(() => committed.push(performance.now() - t0), () => undefined)
    return stored
  }

  const until = Date.now() + SECONDS * 1000
  const keepRunning = async () => {
    while (Date.now() < until) {
      const record = await manager.start({ tenant: 'bench', mode: 'echo', message: 'hello', options: { steps: STEPS, delay_ms: DELAY_MS }, conversationId: null })
      await new Promise(resolve => {
        const unsubscribe = hub.subscribe(record.run_id, event => {
          const t0 = queuedAt.get(event)
          if (t0 !== undefined) delivered.push(performance.now() - t0)
          if (event.type === 'run.completed' || event.type === 'run.failed') { unsubscribe(); resolve() }
        })
      })
    }
  }
  await Promise.all(Array.from({ length: RUNS }, keepRunning))

  const line = (name, times) => {
    const sorted = times.sort((a, b) => a - b)
    const p = q => quantile(sorted, q).toFixed(2)
    return `${name} p50 ${p(50)} ms, p90 ${p(90)} ms, p99 ${p(99)} ms`
  }
  console.log(`${RUNS} echo runs in flight (${STEPS} steps, ${DELAY_MS} ms apart) for ${SECONDS} s under ${dir}: ` +
    `${Math.round(delivered.length / SECONDS)} events/s; ${line('queued → committed', committed)}; ${line('queued → handed to a subscriber', delivered)}`)
} finally {
  await state.close()
  rmSync(dir, { recursive: true, force: true })
}
