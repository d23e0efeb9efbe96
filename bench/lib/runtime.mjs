// Which Node runs a server of the bench: this process's own, or Node 24 in
// the Debian 13 root of scripts/debian-root.sh (glibc 2.41), where the uWS
// build for Node 22 and 24 loads. The root's `run` execs all the way down,
// so the pid spawned is the server's own (CPU from /proc, signals).
import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { REPO_DIR } from './paths.mjs'

const DEBIAN_ROOT = join(REPO_DIR, 'scripts', 'debian-root.sh')
export const RUNTIMES = ['host', '24']

/** [cmd, args] running node with `args` on `runtime` (`host` or `24`). */
export function nodeCommand (runtime, args) {
  if (runtime === 'host') return [process.execPath, args]
  if (runtime === '24') return ['bash', [DEBIAN_ROOT, 'run', 'node', ...args]]
  throw new Error(`a runtime is one of ${RUNTIMES.join(', ')}, got ${runtime}`)
}

/** Builds the root and fetches its Node unless cached (minutes the first time), so a server's start is not timed out by it. */
export function prepareRuntime (runtime, log) {
  if (runtime === 'host') return
  log(`bench: preparing Node ${runtime} in the Debian 13 root (scripts/debian-root.sh ensure)`)
  const r = spawnSync('bash', [DEBIAN_ROOT, 'ensure'], { stdio: ['ignore', 'ignore', 2] })
  if (r.status !== 0) throw new Error(`scripts/debian-root.sh ensure failed (exit ${r.status ?? r.signal})`)
}

/** The Node version `runtime` runs. */
export function nodeVersion (runtime) {
  const [cmd, args] = nodeCommand(runtime, ['--version'])
  return spawnSync(cmd, args, { cwd: REPO_DIR, encoding: 'utf8' }).stdout.trim()
}
