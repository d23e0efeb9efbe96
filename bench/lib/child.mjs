// Helper processes that run to their end (a load client, a database reader,
// infra.sh, the Kafka warm-up): pinned, tracked so they never outlive the
// runner, killed by a watchdog if they overrun.
import { spawn } from 'node:child_process'
import { pinned, track, withNofile } from './procs.mjs'
import { REPO_DIR } from './paths.mjs'

/**
 * Runs `cmd args` (pinned to `cpu`) to its end. Resolves to { stdout, stderr,
 * pid } on exit 0; rejects with the tail of its output otherwise, or when the
 * watchdog killed it after `timeoutMs`. `onStart(pid)` right after the spawn;
 * `onStderrLine(line)` for each line of stderr as it comes (stderr keeps only
 * its last 4000 characters).
 */
export function runChild ({ label, cmd, args, env = process.env, cpu, timeoutMs, onStart, onStderrLine }) {
  const [c, a] = pinned(cpu, cmd, args)
  return new Promise((resolve, reject) => {
    const child = track(spawn(c, a, { cwd: REPO_DIR, env, stdio: ['ignore', 'pipe', 'pipe'] }))
    let stdout = ''
    let stderr = ''
    let partial = ''
    child.stdout.setEncoding('utf8').on('data', d => { stdout += d })
    child.stderr.setEncoding('utf8').on('data', d => {
      stderr = (stderr + d).slice(-4000)
      if (!onStderrLine) return
      const lines = (partial + d).split('\n')
      partial = lines.pop()
      for (const line of lines) onStderrLine(line)
    })
    const watchdog = setTimeout(() => { stderr += `\nbench: ${label} overran ${timeoutMs} ms, killed`; child.kill('SIGKILL') }, timeoutMs)
    child.once('spawn', () => onStart?.(child.pid))
    child.once('error', e => { clearTimeout(watchdog); reject(new Error(`cannot run ${label}: ${e.message}`)) })
    child.once('close', (code, signal) => {
      clearTimeout(watchdog)
      if (code !== 0) return reject(new Error(`${label} exited with ${code ?? signal}: ${stderr.trim().slice(-1500) || stdout.trim().slice(-500)}`))
      resolve({ stdout, stderr: stderr.trim() || undefined, pid: child.pid })
    })
  })
}

/**
 * Runs a node script that takes its configuration as one JSON argument and
 * prints its result as the last line of stdout (JSON); resolves to { out,
 * pid, stderr }. `nofile`: the open-files limit it asks for (ulimit -n).
 */
export async function runNode ({ label, script, config, env, nofile, ...opts }) {
  const node = [process.execPath, [script, JSON.stringify(config)]]
  const [cmd, args] = nofile === undefined ? node : withNofile(nofile, ...node)
  const r = await runChild({ label, cmd, args, env: { ...process.env, ...env }, ...opts })
  let out
  try { out = JSON.parse(r.stdout.trim().split('\n').pop()) } catch {}
  if (!out) throw new Error(`${label} printed no JSON result: ${r.stdout.trim().slice(-500)}`)
  return { out, pid: r.pid, stderr: r.stderr }
}
