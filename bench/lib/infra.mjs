// A private Kafka (and the MinIO that scripts/infra.sh starts beside it) for
// a scenario: `GATEWAY_INFRA_RUN=<scenario temp dir>/infra scripts/infra.sh up`,
// pinned with taskset, and `down` with the same run dir when the scenario
// ends, fails or is interrupted. Never the default run dir: the test suite
// uses that one and tears it down.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { track, atExit, tempDir, removeTempDir, interrupted } from './procs.mjs'
import { runChild } from './child.mjs'
import { ensureBaselineDeps } from './targets.mjs'
import { BENCH_DIR, REPO_DIR } from './paths.mjs'

const SCRIPT = join(REPO_DIR, 'scripts', 'infra.sh')

function readPid (file) {
  try { return Number(readFileSync(file, 'utf8').trim()) || undefined } catch { return undefined }
}

/** The pid if it is alive and its command line names the run dir (as infra.sh checks). */
function ourPid (pid, runDir) {
  if (!pid) return undefined
  try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${runDir}/`) ? pid : undefined } catch { return undefined }
}

/**
 * Runs `infra.sh up` with its own run dir (in a temp dir of its own, so the
 * scenario's temp dir can go without pulling the data from under a running
 * broker); resolves to { brokers, env, runDir, kafkaPid, minioPid, cpu,
 * stop() } once Kafka answers. `cpu`: a CPU number or list for taskset
 * (every process infra.sh starts inherits it), or undefined for no pinning.
 * Progress lines go to `log`. Until stop() has run `down`, an exit hook does
 * it (synchronously) when the runner exits, fails or is interrupted.
 */
export async function startInfra ({ cpu, log, timeoutMs = 15 * 60 * 1000 }) {
  const runDir = join(tempDir('bench-infra-'), 'infra')
  const env = { ...process.env, GATEWAY_INFRA_RUN: runDir }
  const pids = new Set() // known once up; the fallback if the pid files are gone

  const downSync = () => {
    const files = ['kafka.pid', 'minio.pid'].map(f => join(runDir, f))
    for (const f of files) { const p = readPid(f); if (p) pids.add(p) }
    if (existsSync(runDir)) {
      process.stderr.write(`bench: stopping the scenario's Kafka and MinIO (GATEWAY_INFRA_RUN=${runDir} scripts/infra.sh down)\n`)
      spawnSync('bash', [SCRIPT, 'down'], { env, stdio: ['ignore', 'ignore', 2], timeout: 45000 })
    }
    // infra.sh interrupted, timed out, or its run dir gone: kill what is left.
    for (const pid of pids) {
      if (ourPid(pid, runDir)) try { process.kill(pid, 'SIGKILL') } catch {}
    }
    rmSync(runDir, { recursive: true, force: true })
  }
  const unregister = atExit(downSync)

  log(`  starting Kafka: GATEWAY_INFRA_RUN=${runDir} ${cpu === undefined ? '' : `taskset -c ${cpu} `}scripts/infra.sh up`)
  const out = await runChild({ label: 'scripts/infra.sh up', cmd: 'bash', args: [SCRIPT, 'up'], env, cpu, timeoutMs, onStderrLine: line => log(`    ${line}`) })
    .then(r => r.stdout, err => { downSync(); unregister(); throw err })

  const vars = Object.fromEntries(out.split('\n').map(l => /^([A-Z0-9_]+)=(.*)$/.exec(l.trim())).filter(Boolean).map(m => [m[1], m[2]]))
  if (!vars.KAFKA_BROKERS) { downSync(); unregister(); throw new Error(`scripts/infra.sh up printed no KAFKA_BROKERS:\n${out}`) }

  const kafkaPid = readPid(join(runDir, 'kafka.pid'))
  const minioPid = readPid(join(runDir, 'minio.pid'))
  for (const p of [kafkaPid, minioPid]) if (p) pids.add(p)
  let stopped
  return {
    brokers: vars.KAFKA_BROKERS,
    env: vars,
    runDir,
    cpu,
    kafkaPid,
    minioPid,
    /** `infra.sh down-kafka`: stops the broker, keeps MinIO; returns what went wrong, if anything. */
    stopKafka () {
      const r = spawnSync('bash', [SCRIPT, 'down-kafka'], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 45000 })
      return r.status === 0 ? undefined : `infra.sh down-kafka exited with ${r.status ?? r.signal}: ${r.stderr?.trim()}`
    },
    /**
     * `infra.sh down` (Kafka: TERM, KILL after 15 s); the exit hook stays
     * until it is done. Once interrupted, the exit hook does it instead.
     */
    stop () {
      if (interrupted()) return Promise.resolve()
      stopped ??= new Promise(resolve => {
        log(`  stopping Kafka: GATEWAY_INFRA_RUN=${runDir} scripts/infra.sh down`)
        const child = track(spawn('bash', [SCRIPT, 'down'], { cwd: REPO_DIR, env, stdio: ['ignore', 'ignore', 'pipe'] }))
        let err = ''
        child.stderr.setEncoding('utf8').on('data', d => { err += d })
        child.once('error', () => resolve())
        child.once('close', code => {
          if (code !== 0) process.stderr.write(`bench: warning: infra.sh down exited with ${code}: ${err.trim()}\n`)
          resolve()
        })
      }).then(() => {
        if (existsSync(runDir)) downSync()
        unregister()
        removeTempDir(dirname(runDir))
      })
      return stopped
    }
  }
}

/**
 * bench/baselines/kafka-warmup.mjs for `seconds` (pinned to `cpu`): load on a
 * fresh broker until its JIT is warm. Resolves to { perSecond: [sends/s...],
 * sends, records }.
 */
export async function warmKafka ({ brokers, seconds, cpu, bodyFile, log }) {
  ensureBaselineDeps(log)
  log(`  warming Kafka up for ${seconds} s (bench/baselines/kafka-warmup.mjs${cpu === undefined ? '' : ` on CPU${cpu}`})`)
  const env = { ...process.env, KAFKA_BROKERS: brokers, WARMUP_SECONDS: String(seconds), BODY_FILE: bodyFile }
  const { stdout: out } = await runChild({ label: 'kafka-warmup.mjs', cmd: process.execPath, args: [join(BENCH_DIR, 'baselines', 'kafka-warmup.mjs')], env, cpu, timeoutMs: (seconds + 60) * 1000 })
  const lines = out.split('\n').filter(Boolean).map(l => { try { return JSON.parse(l) } catch { return undefined } }).filter(Boolean)
  const perSecond = lines.filter(l => l.s !== undefined).map(l => l.sends)
  const done = lines.find(l => l.msg === 'kafka warm-up done') ?? {}
  log(`  Kafka warm-up, sends per second: ${perSecond.join(' ')}`)
  return { perSecond, sends: done.sends, records: done.records }
}
