#!/usr/bin/env node
// `npm test`: build, bring up real Kafka and MinIO (scripts/infra.sh) and find
// (or install) chromium for the console's browser tests, run every
// tap test against them, tear them down, and end with "N passed, N failed".
// TEST_INFRA=skip runs without the servers; the tests that need them say so loudly.
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const infra = fileURLToPath(new URL('./infra.sh', import.meta.url))
const skipInfra = process.env.TEST_INFRA === 'skip'

function run (cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], ...options })
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status ?? r.signal}`)
  return r
}

function parseEnv (text) {
  const env = {}
  for (const line of text.split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim())
    if (m) env[m[1]] = m[2]
  }
  return env
}

/**
 * A Debian package's command, installed with apt-get when missing, as
 * scripts/infra.sh installs Kafka and MinIO; its path.
 */
function debianCommand (command, pkg) {
  const which = () => spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' })
  let found = which()
  if (found.status !== 0) {
    console.error(`test: ${command} not found; installing Debian's (apt-get install -y ${pkg})`)
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
    if (spawnSync('apt-get', ['install', '-y', pkg], { stdio: ['ignore', 'inherit', 'inherit'], env }).status !== 0) {
      run('apt-get', ['update'], { env })
      run('apt-get', ['install', '-y', pkg], { env })
    }
    found = which()
    if (found.status !== 0) throw new Error(`${command} is still not on PATH after apt-get install`)
  }
  return found.stdout.trim()
}

/**
 * Debian's chromium for the console's browser tests (test/console), driven by
 * playwright-core, which never downloads a browser of its own.
 */
const chromium = () => debianCommand('chromium', 'chromium')

/**
 * libfaketime, which test/cluster/clock-skew.test.ts preloads into one node
 * of a cluster to set its clock minutes off (test/helpers/faketime.ts).
 */
const faketime = () => debianCommand('faketime', 'faketime')

let infraUp = false
function down () {
  if (!infraUp) return
  infraUp = false
  spawnSync('bash', [infra, 'down'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => { down(); process.exit(130) })

let code = 1
let typecheck
let summary = { pass: 0, fail: 0, skip: 0 }
try {
  run('npm', ['run', 'build'])
  // The tests' type check (10 s of one core) runs while Kafka and MinIO start, which is mostly waiting.
  typecheck = spawn('npx', ['tsc', '-p', 'test/tsconfig.json'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
  const typechecked = new Promise(resolve => typecheck.once('exit', (code, signal) => resolve(code ?? signal)))
  const env = { ...process.env }
  env.CHROMIUM_PATH ??= chromium()
  console.error(`test: chromium at ${env.CHROMIUM_PATH}`)
  console.error(`test: faketime at ${faketime()}`)
  if (skipInfra) {
    console.error('test: TEST_INFRA=skip: Kafka and MinIO are NOT started; their tests are skipped')
  } else {
    infraUp = true
    const up = run('bash', [infra, 'up'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })
    Object.assign(env, parseEnv(up.stdout))
    console.error(`test: Apache Kafka ${env.INFRA_KAFKA_VERSION} at ${env.KAFKA_BROKERS}, MinIO ${env.INFRA_MINIO_VERSION} at ${env.S3_ENDPOINT}`)
  }
  // helm, kubeconform, promtool and the schemas test/deploy validates the chart with (built once into the
  // install cache, as Kafka and MinIO are).
  const tools = run('bash', [fileURLToPath(new URL('./deploy-tools.sh', import.meta.url)), 'install'], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' })
  Object.assign(env, parseEnv(tools.stdout))
  const typecheckCode = await typechecked
  if (typecheckCode !== 0) throw new Error(`npx tsc -p test/tsconfig.json exited with ${typecheckCode}`)
  const tap = spawn('npx', ['tap', '--reporter=tap', ...process.argv.slice(2)], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] })
  let tail = ''
  tap.stdout.on('data', chunk => {
    process.stdout.write(chunk)
    tail = (tail + chunk.toString('utf8')).slice(-4096)
  })
  code = await new Promise(resolve => tap.once('exit', c => resolve(c ?? 1)))
  const m = /# \{ ([^}]*) \}\s*(#[^\n]*\s*)*$/.exec(tail)
  if (m) {
    for (const part of m[1].split(',')) {
      const [k, v] = part.split(':').map(s => s.trim())
      if (k in summary) summary[k] = Number(v)
    }
  } else if (code !== 0) summary.fail = Math.max(1, summary.fail)
} catch (err) {
  console.error(`test: ${err.message}`)
  summary.fail = Math.max(1, summary.fail)
} finally {
  if (typecheck?.exitCode === null) typecheck.kill()
  down()
}
if (summary.fail > 0 && code === 0) code = 1
console.log(`${summary.pass} passed, ${summary.fail} failed${summary.skip ? `, ${summary.skip} skipped` : ''}`)
process.exit(code)
