import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'

export const GATEWAY_BIN = fileURLToPath(new URL('../../bin/gateway.js', import.meta.url))

/**
 * `node bin/gateway.js …` as an operator runs it. tap's file tracker
 * (@tapjs/processinfo, for coverage, which is off) puts itself into the
 * NODE_OPTIONS of every child; in a gateway it costs about 0.8 s of CPU and
 * 0.5 s of start-up, and the suite starts hundreds. `env` execs node, so the
 * child's pid, signals and exit code are node's own.
 */
function gatewayCommand (args: string[], { isolated = false, nodeArgs = [] }: SpawnOptions = {}): [string, string[]] {
  const command: [string, string[]] = ['env', ['-u', 'NODE_OPTIONS', process.execPath, ...nodeArgs, GATEWAY_BIN, ...args]]
  // Its own pid namespace, as on a machine of its own: it sees no other node's processes, nor they its.
  // --kill-child: the node dies with `unshare`, even when that is killed -9.
  return isolated ? ['unshare', ['--pid', '--fork', '--mount-proc', '--kill-child=SIGKILL', '--', command[0], ...command[1]]] : command
}

interface Tap { teardown(fn: () => unknown): void }

export interface Child {
  proc: ChildProcess
  lines: Array<Record<string, unknown>>
  /** The stdout lines as written. */
  texts: string[]
  stderr: () => string
  /** Resolves with the first log line matching `msg`, already seen or still to come. */
  waitFor(msg: string): Promise<Record<string, unknown>>
  exit: Promise<number | null>
  /** Sends `signal` to the gateway's node process itself (inside its namespace, when isolated). */
  signal(signal: NodeJS.Signals): Promise<void>
}

export interface SpawnOptions {
  /** In a pid namespace of its own (`unshare --pid --fork --mount-proc`), as a node on another machine. */
  isolated?: boolean
  /** Node's own options, before the script (a `--require` preload). */
  nodeArgs?: string[]
}

/** The pid, in this namespace, of the one child `unshare --fork` made: the gateway. */
async function childPid (pid: number): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim()
    if (children !== '') return Number(children.split(' ')[0])
    await new Promise(resolve => setTimeout(resolve, 10))
  }
  throw new Error(`unshare (pid ${pid}) has no child`)
}

/** Runs `gateway` from dist as a real process; killed at teardown if still alive. */
export function spawnGateway (t: Tap, args: string[], env: Record<string, string>, options: SpawnOptions = {}): Child {
  const proc = spawn(...gatewayCommand(args, options), { env: { PATH: process.env['PATH'] ?? '', PORT: '0', HARNESS_PORT: '0', ...env }, stdio: ['pipe', 'pipe', 'pipe'] })
  const lines: Array<Record<string, unknown>> = []
  const texts: string[] = []
  const waiters: Array<{ msg: string, resolve: (l: Record<string, unknown>) => void }> = []
  let err = ''
  proc.stderr!.on('data', d => { err += d })
  createInterface({ input: proc.stdout! }).on('line', text => {
    texts.push(text)
    let line: Record<string, unknown>
    try { line = JSON.parse(text) } catch { line = { msg: text } }
    lines.push(line)
    for (const w of waiters.filter(w => w.msg === line['msg'])) w.resolve(line)
  })
  const exit = new Promise<number | null>(resolve => proc.once('exit', code => resolve(code)))
  t.teardown(() => { if (proc.exitCode === null) proc.kill('SIGKILL') })
  let gatewayPid: Promise<number> | undefined
  return {
    proc,
    lines,
    texts,
    stderr: () => err,
    exit,
    async signal (signal) {
      if (!options.isolated) proc.kill(signal)
      else process.kill(await (gatewayPid ??= childPid(proc.pid!)), signal)
    },
    waitFor: msg => new Promise((resolve, reject) => {
      const seen = lines.find(l => l['msg'] === msg)
      if (seen) return resolve(seen)
      waiters.push({ msg, resolve })
      exit.then(code => reject(new Error(`gateway exited (${code}) before logging "${msg}": ${err}`)))
    })
  }
}

/**
 * Runs a `gateway` command to completion. Resolves on 'close', not 'exit':
 * 'exit' can come while the tail of stdout is still in the pipe, which once
 * made `gateway tail` look as if committed records were missing.
 */
export async function runGateway (args: string[], env: Record<string, string>, input?: string): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const proc = spawn(...gatewayCommand(args), { env: { PATH: process.env['PATH'] ?? '', ...env } })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', d => { stdout += d })
  proc.stderr.on('data', d => { stderr += d })
  proc.stdin.end(input ?? '')
  // 'close', not 'exit': 'exit' may come before the last of stdout is read.
  const code = await new Promise<number | null>(resolve => proc.once('close', resolve))
  return { code, stdout, stderr }
}

export interface TailedMessage {
  offset: number
  key: string
  headers: Record<string, string>
  value: any
}

/**
 * The embedded bus log of `topic`, read by `gateway tail` in its own process,
 * as an operator would. (A second LMDB handle inside the test process could
 * close the environment the gateway under test is using.)
 */
export async function tailBus (dataDir: string, topic: string): Promise<TailedMessage[]> {
  const { code, stdout, stderr } = await runGateway(['tail', topic], { DATA_DIR: dataDir })
  if (code !== 0) throw new Error(`gateway tail failed: ${stderr}`)
  return stdout.split('\n').filter(Boolean).map(line => JSON.parse(line) as TailedMessage)
}
