#!/usr/bin/env node
// `npm test`: build, bring up real Kafka and MinIO (scripts/infra.sh), run
// every tap test against them under Node 24 in a Debian 13 root
// (scripts/debian-root.sh, where uWS 20.57 loads and chromium is installed
// for the console's browser tests), then the HTTP edge's tests under Node 22
// there and under this machine's own Node (Node 20 here, on uWS 20.30), tear
// the servers down, and end with "N passed, N failed" over all three runs.
// TEST_INFRA=skip runs without the servers; the tests that need them say so loudly.
// TEST_RUNTIME=host runs every test under this machine's Node instead, once.
import { spawn, spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const infra = fileURLToPath(new URL('./infra.sh', import.meta.url))
const debianRoot = fileURLToPath(new URL('./debian-root.sh', import.meta.url))
const skipInfra = process.env.TEST_INFRA === 'skip'
const onHost = process.env.TEST_RUNTIME === 'host'
const tapArgs = process.argv.slice(2)
/**
 * What runs on the other runtimes: the files where the two uWS builds and
 * the runtimes differ (the loader, framing, bodies, pause/resume, early
 * answers, start warnings). The whole suite twice would not fit in a warm run
 * of about 15 minutes.
 */
const EDGE = ['test/http/']

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
 * A Debian package's command on this machine (TEST_RUNTIME=host), installed
 * with apt-get when missing, as scripts/infra.sh installs Kafka and MinIO;
 * its path. The Debian 13 root has its own (scripts/debian-root.sh).
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

/** Resolves with the exit code (or signal) of a child started with spawn(). */
function exited (child) {
  return new Promise(resolve => child.once('exit', (code, signal) => resolve(code ?? signal)))
}

/** One tap run; its TAP goes to stdout. Resolves with its exit code and the counts of its last summary line. */
async function tap (cmd, args, env) {
  const child = spawn(cmd, [...args, '--reporter=tap'], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] })
  let tail = ''
  child.stdout.on('data', chunk => {
    process.stdout.write(chunk)
    tail = (tail + chunk.toString('utf8')).slice(-4096)
  })
  const code = await exited(child)
  const counts = { pass: 0, fail: 0, skip: 0 }
  const m = /# \{ ([^}]*) \}\s*(#[^\n]*\s*)*$/.exec(tail)
  if (m) {
    for (const part of m[1].split(',')) {
      const [k, v] = part.split(':').map(s => s.trim())
      if (k in counts) counts[k] = Number(v)
    }
  } else if (code !== 0) counts.fail = 1
  return { code: typeof code === 'number' ? code : 1, counts }
}

let infraUp = false
function down () {
  if (!infraUp) return
  infraUp = false
  spawnSync('bash', [infra, 'down'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => { down(); process.exit(130) })

let code = 0
let typecheck
const summary = { pass: 0, fail: 0, skip: 0 }
const add = result => {
  for (const k of Object.keys(summary)) summary[k] += result.counts[k]
  if (result.code !== 0) code = result.code
}
try {
  run('npm', ['run', 'build'])
  // The tests' type check (10 s of one core) and the root's check run while Kafka and MinIO start, which is mostly waiting.
  typecheck = spawn('npx', ['tsc', '-p', 'test/tsconfig.json'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] })
  const typechecked = exited(typecheck)
  const rooted = onHost ? Promise.resolve(0) : exited(spawn('bash', [debianRoot, 'ensure'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] }))
  const env = { ...process.env }
  if (onHost) {
    env.CHROMIUM_PATH ??= chromium()
    console.error(`test: chromium at ${env.CHROMIUM_PATH}`)
    console.error(`test: faketime at ${faketime()}`)
  }
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
  const rootCode = await rooted
  if (rootCode !== 0) throw new Error(`scripts/debian-root.sh ensure exited with ${rootCode}`)
  if (onHost) {
    console.error(`test: every test under this machine's Node ${process.version} (TEST_RUNTIME=host)`)
    add(await tap('npx', ['tap', ...tapArgs], env))
  } else {
    console.error(`test: ${tapArgs.length > 0 ? tapArgs.join(' ') : 'every test'} under Node 24 in the Debian 13 root`)
    add(await tap('bash', [debianRoot, 'run', 'node_modules/.bin/tap', ...tapArgs], { ...env, CHROMIUM_PATH: '/usr/bin/chromium' }))
    if (tapArgs.length === 0) {
      console.error(`test: ${EDGE.join(' ')} under Node 22 in the Debian 13 root`)
      add(await tap('bash', [debianRoot, 'run', 'node_modules/.bin/tap', ...EDGE], { ...env, DEBIAN_ROOT_NODE: '22' }))
      console.error(`test: ${EDGE.join(' ')} under this machine's Node ${process.version}`)
      add(await tap('npx', ['tap', ...EDGE], env))
    }
  }
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
