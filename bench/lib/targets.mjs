// The servers a scenario can measure. Each factory returns a target
// { label, start(ctx) → server } where server is { url, pid, stop(), ... }
// (see startServer in procs.mjs). ctx supplies the CPU pin and a temp dir.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer, listeningLine, tempDir, freePort } from './procs.mjs'

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)))
export const REPO_DIR = dirname(BENCH_DIR)

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
 * The gateway from dist/ (`node bin/gateway.js start`), on ports chosen by
 * the kernel, a fresh DATA_DIR, LOG_LEVEL from the settings (info by
 * default, as in production). `env` adds or overrides variables; it may be
 * a function `async (ctx, dataDir) → env` for set-up that needs files (a
 * clients file in ctx.tmpDir) or a known port (freePort() for HARNESS_PORT).
 * The runner's own environment is inherited, so gateway variables set in the
 * shell (BUS, STORAGE...) apply too. The server object also carries
 * `dataDir` and `env` (the overrides used).
 */
export function gateway ({ label = 'gateway', env: envSpec = {}, nodeArgs = [] } = {}) {
  return {
    label,
    kind: 'gateway',
    async start (ctx) {
      checkBuild(ctx.warn)
      const dataDir = tempDir('bench-gateway-data-')
      const env = typeof envSpec === 'function' ? await envSpec(ctx, dataDir) : envSpec
      const args = [...ctx.nodeArgsFor(label), ...nodeArgs, join(REPO_DIR, 'bin', 'gateway.js'), 'start']
      // "gateway listening" is an info line; below info, pick the port here and poll /health.
      const level = env.LOG_LEVEL ?? ctx.settings.logLevel
      const logsListening = ['info', 'debug', 'trace'].includes(level)
      const port = logsListening ? 0 : await freePort()
      const server = await startServer({
        label,
        cmd: process.execPath,
        args,
        cwd: REPO_DIR,
        cpu: ctx.serverCpu,
        dir: ctx.tmpDir,
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: String(port),
          HARNESS_PORT: '0',
          DATA_DIR: dataDir,
          LOG_LEVEL: level,
          ...env
        },
        ready: listeningLine('gateway listening'),
        readyHttp: logsListening ? undefined : { port, path: '/health' }
      })
      return { ...server, dataDir, env }
    }
  }
}

/**
 * bench/baselines/bare-uws.mjs: the same uWS build answering /health with
 * nothing else; `script` names another bare uWS baseline in bench/baselines/
 * (bare-uws-json.mjs: a JSON POST parsed and answered).
 */
export function bareUws ({ label = 'bare-uws', script = 'bare-uws.mjs' } = {}) {
  return {
    label,
    kind: 'baseline',
    start (ctx) {
      return startServer({
        label,
        cmd: process.execPath,
        args: [...ctx.nodeArgsFor(label), join(BENCH_DIR, 'baselines', script)],
        cwd: REPO_DIR,
        cpu: ctx.serverCpu,
        dir: ctx.tmpDir,
        env: { ...process.env, HOST: '127.0.0.1', PORT: '0' },
        ready: listeningLine()
      })
    }
  }
}

const BASELINES_DIR = join(BENCH_DIR, 'baselines')

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
  return {
    label,
    kind: 'baseline',
    async start (ctx) {
      checkBuild(ctx.warn) // it imports the gateway's schema from dist/
      ensureBaselineDeps(ctx.log)
      const env = typeof envSpec === 'function' ? await envSpec(ctx) : envSpec
      return startServer({
        label,
        cmd: process.execPath,
        args: [...ctx.nodeArgsFor(label), join(BASELINES_DIR, 'fastify-kafkajs.mjs')],
        cwd: REPO_DIR,
        cpu: ctx.serverCpu,
        dir: ctx.tmpDir,
        env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: ctx.settings.logLevel, ...env },
        ready: listeningLine('fastify-kafkajs listening'),
        timeoutMs: 60000
      })
    }
  }
}
