// Child processes of the bench: spawning servers (pinned with taskset when
// asked), waiting for their "listening" line, stopping them, and making sure
// none outlives the runner (normal exit, error, SIGINT/SIGTERM/SIGHUP).
import { spawn, spawnSync } from 'node:child_process'
import { openSync, closeSync, readFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { createServer } from 'node:net'

const live = new Set()
const tempDirs = new Set()
const exitHooks = new Set()

let stopping = false
/** True once SIGINT/SIGTERM/SIGHUP arrived: the runner is winding down. */
export const interrupted = () => stopping

/** Registers a child so it is killed if the runner goes away first. */
export function track (child) {
  if (stopping) {
    // Interrupted: nothing new may start while the runner winds down.
    try { child.kill('SIGKILL') } catch {}
    throw new Error('interrupted')
  }
  if (child.exitCode !== null || child.signalCode !== null) return child
  live.add(child)
  child.once('exit', () => live.delete(child))
  return child
}

function signalAll (signal) {
  for (const child of live) {
    try { child.kill(signal) } catch {}
  }
}

/**
 * Registers a synchronous clean-up for what runs outside the tracked children
 * (e.g. a broker started detached by scripts/infra.sh): it runs at exit, also
 * after an error or SIGINT/SIGTERM/SIGHUP, before the temp dirs go. Returns
 * a function that unregisters it (call it once the clean-up ran normally).
 */
export function atExit (fn) {
  exitHooks.add(fn)
  return () => exitHooks.delete(fn)
}

/** A temp dir removed when the runner exits. */
export function tempDir (prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  tempDirs.add(dir)
  return dir
}

export function removeTempDir (dir) {
  tempDirs.delete(dir)
  try { rmSync(dir, { recursive: true, force: true }) } catch {}
}

let handlersInstalled = false
/** Kill children on exit, on an uncaught error and on SIGINT/SIGTERM/SIGHUP. */
export function installCleanupHandlers () {
  if (handlersInstalled) return
  handlersInstalled = true
  process.on('exit', () => {
    signalAll('SIGKILL')
    for (const fn of [...exitHooks]) {
      exitHooks.delete(fn)
      try { fn() } catch (err) { process.stderr.write(`bench: clean-up failed: ${err?.message ?? err}\n`) }
    }
    for (const dir of tempDirs) { try { rmSync(dir, { recursive: true, force: true }) } catch {} }
  })
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(signal, () => {
      if (stopping) { signalAll('SIGKILL'); process.exit(130) }
      stopping = true
      process.stderr.write(`\nbench: ${signal}, stopping ${live.size} child process(es)\n`)
      const children = [...live]
      signalAll('SIGTERM')
      const deadline = Date.now() + 3000
      const timer = setInterval(() => {
        if (children.every(c => c.exitCode !== null || c.signalCode !== null) || Date.now() > deadline) {
          clearInterval(timer)
          process.exit(signal === 'SIGINT' ? 130 : 143) // 'exit' handler SIGKILLs the rest
        }
      }, 50)
    })
  }
  for (const event of ['uncaughtException', 'unhandledRejection']) {
    process.on(event, err => {
      process.stderr.write(`bench: ${event}: ${err?.stack ?? err}\n`)
      process.exit(1)
    })
  }
}

let tasksetOk
export function hasTaskset () {
  tasksetOk ??= spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status === 0
  return tasksetOk
}

/** [cmd, args] prefixed with `taskset -c CPU` when cpu is given. */
export function pinned (cpu, cmd, args) {
  return cpu === undefined || cpu === null ? [cmd, args] : ['taskset', ['-c', String(cpu), cmd, ...args]]
}

/** [cmd, args] run through `sh -c 'ulimit -n N (or the hard limit); exec ...'`: for processes holding thousands of sockets. */
export function withNofile (nofile, cmd, args) {
  return ['sh', ['-c', `ulimit -n ${nofile} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`, cmd, ...args]]
}

/** The hard open-files limit (Infinity when unlimited), or undefined if unknown. */
export function hardNofile () {
  const r = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' })
  const v = r.stdout?.trim()
  return v === 'unlimited' ? Infinity : Number(v) || undefined
}

/** Moves the runner itself (all threads) onto a CPU, so it stays off the server's. */
export function pinSelf (cpu) {
  spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(process.pid)], { stdio: 'ignore' })
}

function tail (file, lines = 30) {
  try {
    const text = readFileSync(file, 'utf8')
    return text.split('\n').slice(-lines - 1).join('\n').trimEnd()
  } catch { return '' }
}

/**
 * Starts a server whose stdout and stderr go to files in `dir` (no pipe the
 * runner must drain, so a busy access log never blocks the server and the
 * runner spends no CPU reading it), then polls stdout for the line `ready`
 * recognises (it returns the port, or undefined).
 *
 * Resolves to { label, pid, port, url, child, logFile, errFile, stop(), alive() }.
 */
export async function startServer ({ label, cmd, args, env, cwd, cpu, dir, ready, readyHttp, timeoutMs = 30000 }) {
  const logFile = join(dir, `${label}.stdout.log`)
  const errFile = join(dir, `${label}.stderr.log`)
  const out = openSync(logFile, 'w')
  const err = openSync(errFile, 'w')
  const [c, a] = pinned(cpu, cmd, args)
  const child = track(spawn(c, a, { cwd, env, stdio: ['ignore', out, err] }))
  closeSync(out)
  closeSync(err)
  let spawnError
  child.once('error', e => { spawnError = e })

  const failure = (why) => {
    const e = new Error(`${why}\n--- stdout (tail) ---\n${tail(logFile)}\n--- stderr (tail) ---\n${tail(errFile)}`)
    try { child.kill('SIGKILL') } catch {}
    return e
  }

  const deadline = Date.now() + timeoutMs
  let port
  let scanned = 0
  while (port === undefined) {
    if (spawnError) throw failure(`cannot spawn ${c}: ${spawnError.message}`)
    if (child.exitCode !== null || child.signalCode !== null) throw failure(`exited before listening (code ${child.exitCode}, signal ${child.signalCode})`)
    if (Date.now() > deadline) throw failure(`not listening after ${timeoutMs} ms`)
    await sleep(50)
    if (readyHttp) {
      // No listening line to read (e.g. a quiet log level): poll a known port instead.
      try {
        const res = await fetch(`http://127.0.0.1:${readyHttp.port}${readyHttp.path}`, { signal: AbortSignal.timeout(1000) })
        await res.arrayBuffer()
        if (res.ok) port = readyHttp.port
      } catch {}
      continue
    }
    let text = ''
    try { text = readFileSync(logFile, 'utf8') } catch {}
    const lines = text.split('\n')
    // Only complete lines; resume after the ones already seen.
    for (let i = scanned; i < lines.length - 1; i++) {
      port = ready(lines[i])
      if (port !== undefined) break
    }
    scanned = Math.max(scanned, lines.length - 1)
  }

  let stopped
  const stop = (timeoutMs = 15000) => {
    stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise(resolve => child.once('exit', resolve))
        child.kill('SIGTERM')
        const timer = setTimeout(() => { try { child.kill('SIGKILL') } catch {} }, timeoutMs)
        await exited
        clearTimeout(timer)
      }
      return { code: child.exitCode, signal: child.signalCode }
    })()
    return stopped
  }

  const alive = () => child.exitCode === null && child.signalCode === null
  return { label, pid: child.pid, port, url: `http://127.0.0.1:${port}`, child, logFile, errFile, stop, alive, logTail: () => tail(logFile), errTail: () => tail(errFile) }
}

/** A port free right now on 127.0.0.1 (the kernel's pick), for servers that cannot report theirs. */
export function freePort () {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

/** `ready` matcher for a JSON log line `{"msg":"<...>listening","<field>":N}` (field `port` unless said). */
export function listeningLine (msg, field = 'port') {
  return line => {
    if (!line.includes('listening')) return undefined
    try {
      const o = JSON.parse(line)
      if ((msg === undefined ? /listening/.test(o.msg ?? '') : o.msg === msg) && Number.isInteger(o[field]) && o[field] > 0) return o[field]
    } catch {}
    return undefined
  }
}
