// The servers a scenario can measure. Each factory returns a target
// { label, kind, start(ctx) → server } where server is { url, pid, stop(), ... }
// (see startServer in procs.mjs). ctx supplies the CPU pin and a temp dir.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { cpus } from 'node:os'
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { startServer, listeningLine, tempDir, freePort, withNofile } from './procs.mjs'
import { BENCH_DIR, REPO_DIR } from './paths.mjs'

const BASELINES_DIR = join(BENCH_DIR, 'baselines')

function newestMtime (dir, ext) {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p, ext))
    else if (entry.name.endsWith(ext)) newest = Math.max(newest, statSync(p).mtimeMs)
  }
  return newest
}

/** Throws when dist/ is missing; warns (once) when src/ has changed since the last build. */
let staleWarned = false
export function checkBuild (warn) {
  const entry = join(REPO_DIR, 'dist', 'cli', 'index.js')
  if (!existsSync(entry)) throw new Error('dist/ is missing: run `npm run build` first')
  if (staleWarned) return
  try {
    const src = newestMtime(join(REPO_DIR, 'src'), '.ts')
    const dist = newestMtime(join(REPO_DIR, 'dist'), '.js')
    if (src > dist) {
      staleWarned = true
      warn('src/ has changes newer than dist/: the gateway measured is the last build (run `npm run build` to measure the sources)')
    }
  } catch {}
}

/**
 * A node process serving on 127.0.0.1, pinned to the server CPU, with
 * BENCH_CPU_PROF's flags for its label; `nofile`: the open-files limit it
 * asks for (ulimit -n). The runner's environment is inherited, `env` on top.
 */
function startNode (ctx, { label, args, env, nofile, ready, readyHttp, timeoutMs }) {
  const node = [process.execPath, [...ctx.nodeArgsFor(label), ...args]]
  const [cmd, cmdArgs] = nofile === undefined ? node : withNofile(nofile, ...node)
  return startServer({ label, cmd, args: cmdArgs, cwd: REPO_DIR, cpu: ctx.serverCpu, dir: ctx.tmpDir, env: { ...process.env, HOST: '127.0.0.1', ...env }, ready, readyHttp, timeoutMs })
}

const resolveEnv = (spec, ...args) => (typeof spec === 'function' ? spec(...args) : spec)

/**
 * The gateway from dist/ (`node bin/gateway.js start`), on ports chosen by
 * the kernel, a fresh DATA_DIR, LOG_LEVEL from the settings (info by
 * default, as in production) unless `logLevel` says otherwise. `env` adds or
 * overrides variables; it may be a function `async (ctx, dataDir) → env` for
 * set-up that needs files (a clients file in ctx.tmpDir). Gateway variables
 * set in the shell (BUS, STORAGE...) apply too. `listenOn: 'harnessPort'`
 * for a gateway whose only listener is the harness (ROLES=harness). The
 * server object also carries `dataDir`, `env` (the overrides used) and
 * `logLevel`. `readyLine`: the log line that says it serves (`workers listening`
 * for a supervisor of WORKERS > 1); `pin: false` lets it run on every CPU of
 * the machine (explicitly: the runner's own affinity would be inherited).
 */
export function gateway ({ label = 'gateway', env: envSpec = {}, nodeArgs = [], logLevel, nofile, listenOn = 'port', readyLine = 'gateway listening', pin = true } = {}) {
  return {
    label,
    kind: 'gateway',
    async start (ctx) {
      checkBuild(ctx.warn)
      const dataDir = tempDir('bench-gateway-data-')
      const env = await resolveEnv(envSpec, ctx, dataDir)
      const level = env.LOG_LEVEL ?? logLevel ?? ctx.settings.logLevel
      // "gateway listening" is an info line; below info, pick the port here and poll /health.
      const logsListening = ['info', 'debug', 'trace'].includes(level)
      const port = logsListening ? 0 : await freePort()
      const ports = listenOn === 'harnessPort' ? { PORT: '0', HARNESS_PORT: String(port) } : { PORT: String(port), HARNESS_PORT: '0' }
      const server = await startNode(pin ? ctx : { ...ctx, serverCpu: `0-${cpus().length - 1}` }, {
        label,
        args: [...nodeArgs, join(REPO_DIR, 'bin', 'gateway.js'), 'start'],
        nofile,
        env: { ...ports, DATA_DIR: dataDir, LOG_LEVEL: level, ...env },
        ready: listeningLine(readyLine, listenOn),
        readyHttp: logsListening ? undefined : { port, path: '/health' }
      })
      return { ...server, dataDir, env, logLevel: level }
    }
  }
}

/**
 * A baseline server, bench/baselines/<script>, on a port the kernel picks
 * (PORT=0), ready at its `{"msg":"... listening","port":N}` line. `env` may
 * be a function `async ctx → env`; `before(ctx)` runs first (a build check,
 * an install). The server object also carries `env`.
 */
export function baseline ({ label, script, env: envSpec = {}, nofile, ready = listeningLine(), timeoutMs, before }) {
  return {
    label,
    kind: 'baseline',
    async start (ctx) {
      await before?.(ctx)
      const env = await resolveEnv(envSpec, ctx)
      const server = await startNode(ctx, { label, args: [join(BASELINES_DIR, script)], env: { PORT: '0', ...env }, nofile, ready, timeoutMs })
      return { ...server, env }
    }
  }
}

/**
 * bench/baselines/bare-uws.mjs: the same uWS build answering /health with
 * nothing else; `script` names another bare uWS baseline in bench/baselines/
 * (bare-uws-json.mjs: a JSON POST parsed and answered).
 */
export const bareUws = ({ label = 'bare-uws', script = 'bare-uws.mjs' } = {}) => baseline({ label, script })

/**
 * Installs the baselines' own dependencies (bench/baselines/package.json,
 * never the gateway's) with `npm --prefix bench/baselines install` when
 * node_modules is missing or older than package.json / package-lock.json.
 */
export function ensureBaselineDeps (log) {
  const installed = join(BASELINES_DIR, 'node_modules', '.package-lock.json')
  const mtime = f => { try { return statSync(f).mtimeMs } catch { return 0 } }
  const newest = Math.max(mtime(join(BASELINES_DIR, 'package.json')), mtime(join(BASELINES_DIR, 'package-lock.json')))
  if (existsSync(installed) && mtime(installed) >= newest) return
  log('bench: installing the baselines\' dependencies: npm --prefix bench/baselines install')
  // install, not ci: it follows the lock file and still works when package.json got a new entry.
  const r = spawnSync('npm', ['--prefix', BASELINES_DIR, 'install', '--no-audit', '--no-fund'], { cwd: REPO_DIR, stdio: ['ignore', 2, 2] })
  if (r.status !== 0) throw new Error(`npm --prefix bench/baselines install failed (exit ${r.status ?? r.signal})`)
}

/**
 * bench/baselines/fastify-kafkajs.mjs: Fastify 5 + kafkajs doing the
 * gateway's telemetry work (see the file). `env` (object, or async (ctx) →
 * object) carries KAFKA_BROKERS, JWT_PUBLIC_KEY_FILE, JWT_ISSUER...
 */
export function fastifyKafkajs ({ label = 'fastify-kafkajs', env: envSpec = {} } = {}) {
  return baseline({
    label,
    script: 'fastify-kafkajs.mjs',
    env: async ctx => ({ LOG_LEVEL: ctx.settings.logLevel, ...await resolveEnv(envSpec, ctx) }),
    ready: listeningLine('fastify-kafkajs listening'),
    timeoutMs: 60000,
    before: ctx => {
      checkBuild(ctx.warn) // it imports the gateway's schema from dist/
      ensureBaselineDeps(ctx.log)
    }
  })
}
