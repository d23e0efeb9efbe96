// CPU per request of gateway builds side by side, for A/B decisions on a
// shared machine where req/s move too much to compare:
//
//   node bench/cpu-ab.mjs A=/work/wt/base B=.                     # two worktrees, each built
//   node bench/cpu-ab.mjs info=. warn=.:LOG_LEVEL=warn            # one build, two settings
//   CPU_AB_BUS=kafka node bench/cpu-ab.mjs A=/work/wt/base B=.   # a private Kafka, pinned with wrk
//   CPU_AB_BUS=kafka CPU_AB_KAFKA_BROKERS=127.0.0.1:9092 ...      # a broker already running
//   CPU_AB_BUS=kafka node bench/cpu-ab.mjs go=go-peer gateway=.   # against the Go peer, per core
//   CPU_AB_SCENARIO=runs node bench/cpu-ab.mjs writes=runs-uws gateway=.   # runs:start against the same LMDB writes
//   CPU_AB_BUS=kafka node bench/cpu-ab.mjs go=go-peer node20=. node24=.:NODE=24   # one build on two runtimes
//
// A variant is `label=<repo dir>[:NAME=value,...]`: `node <dir>/bin/gateway.js
// start` with those variables (NODE=24: under Node 24 in the Debian 13 root
// of scripts/debian-root.sh, where uWS 20.57 loads, instead of this node;
// the directory must then be the repository, /tmp or the cache); `label=go-peer[:NAME=value,...]` is the Go
// peer of the telemetry scenario (Kafka only), and the table then gives each
// gateway's CPU per request against it, per round and as the median of
// those per-round ratios: the figure issue 15 asks to beat.
// CPU_AB_SCENARIO=runs sends the runs scenario's `POST /runs:start` (an echo
// run) to the harness port instead of telemetry, and takes
// `label=runs-uws` as its reference: bench/baselines/runs-uws.mjs in its
// `lmdb-run` mode, the same LMDB writes without the harness. Every variant is
// started once (pinned to CPU0, wrk and Kafka on CPU1), then the variants
// take turns, CPU_AB_ROUNDS times: a warm-up, then CPU_AB_SECONDS of wrk
// (closed loop, CPU_AB_CONNECTIONS, or at CPU_AB_RATE req/s with wrk's
// delay() hook). Per turn: the server's CPU seconds (all threads, /proc) over
// the requests wrk completed, the main thread's share apart, and from a
// gateway's /metrics its GC time and records per bus send; the table shows
// medians and each round's figure. CPU per request moves much less than
// req/s when others share the machine, but not nothing: it can move by ±20%
// between rounds of one run, so read the spread, and alternate enough rounds
// to see through it.
import { generateKeyPairSync } from 'node:crypto'
import { readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { installCleanupHandlers, pinSelf, tempDir, hasTaskset, startServer, listeningLine } from './lib/procs.mjs'
import { startInfra, warmKafka } from './lib/infra.mjs'
import { ensureWrk, runWrk, luaScript, pacedLua } from './lib/wrk.mjs'
import { AUDIENCE, CLIENT, ISSUER, login, signToken } from './lib/login.mjs'
import { goPeer } from './lib/go-peer.mjs'
import { sampleSystem, cpuSeconds } from './lib/sampler.mjs'
import { median } from './lib/stats.mjs'
import { REPO_DIR } from './lib/paths.mjs'
import { nodeCommand, nodeVersion, prepareRuntime } from './lib/runtime.mjs'

const num = (name, def) => (process.env[name] ? Number(process.env[name]) : def)
const ROUNDS = num('CPU_AB_ROUNDS', 5)
const SECONDS = num('CPU_AB_SECONDS', 8)
const WARMUP = num('CPU_AB_WARMUP', 2)
const CONNECTIONS = num('CPU_AB_CONNECTIONS', 50)
const RATE = num('CPU_AB_RATE', 0)
const BUS = process.env.CPU_AB_BUS ?? 'local'
const SCENARIO = process.env.CPU_AB_SCENARIO ?? 'telemetry'
/** The variant each scenario's gateways are compared with, round by round. */
const REFERENCE = { telemetry: 'go-peer', runs: 'runs-uws' }[SCENARIO]
const PIN = hasTaskset()
const SERVER_CPU = PIN ? 0 : undefined
const LOAD_CPU = PIN ? 1 : undefined
const BODY = readFileSync(join(REPO_DIR, 'test', 'fixtures', 'asset-track.json'))
const log = line => process.stderr.write(line + '\n')

if (REFERENCE === undefined) {
  log(`CPU_AB_SCENARIO must be telemetry or runs, got ${SCENARIO}`)
  process.exit(2)
}
const variants = process.argv.slice(2).map(arg => {
  const m = /^([^=]+)=([^:]+)(?::(.*))?$/.exec(arg)
  if (!m) throw new Error(`bad variant ${arg}: label=<repo dir>[:NAME=value,...]`)
  const { NODE: runtime = 'host', ...env } = Object.fromEntries((m[3] ?? '').split(',').filter(Boolean).map(kv => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]))
  return m[2] === REFERENCE ? { label: m[1], reference: true, env } : { label: m[1], dir: resolve(m[2]), env, runtime }
})
if (variants.length === 0) {
  log(`usage: node bench/cpu-ab.mjs label=<repo dir>|${REFERENCE}[:NAME=value,...] ...`)
  process.exit(2)
}
if (SCENARIO === 'telemetry' && variants.some(v => v.reference) && BUS !== 'kafka') {
  log('the go-peer variant publishes to Kafka: set CPU_AB_BUS=kafka')
  process.exit(2)
}

/** CPU seconds of every thread of `pid`, by thread name (`node` is the main thread). */
function threadSeconds (pid) {
  const out = {}
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let text
    try { text = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8') } catch { continue }
    const name = tid === String(pid) ? 'main' : text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'))
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ')
    out[name] = (out[name] ?? 0) + (Number(f[11]) + Number(f[12])) / 100
  }
  return out
}

/** The runs scenario's request (bench/scenarios/runs/knobs.mjs): an echo run, no token (the harness gate is off by default). */
function runsRequest () {
  const request = { method: 'POST', path: '/runs:start', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ message: 'hello', mode: 'echo' }) }
  return RATE > 0 ? { ...request, lua: luaScript(request) + pacedLua({ ratePerThread: RATE }) } : request
}

function telemetryRequest (token) {
  const request = {
    method: 'POST',
    path: '/v1/asset/track',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'X-Request-Id': 'cpu-ab', 'X-Request-Timestamp': '1763799330' },
    body: BODY
  }
  return RATE > 0 ? { ...request, lua: luaScript(request) + pacedLua({ ratePerThread: RATE }) } : request
}

/**
 * From the gateway's /metrics: its `gateway_telemetry_batch_records` histogram
 * (count, sum) and the seconds its main thread spent in GC, all kinds
 * (prom-client's default metrics); undefined for the Go peer.
 */
async function gatewayStats (v) {
  if (v.reference) return undefined
  const text = await (await fetch(`${v.server.url}/metrics`)).text()
  const value = name => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
  let gc = 0
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{[^}]*\} (\S+)$/gm)) gc += Number(m[1])
  return { count: value('gateway_telemetry_batch_records_count'), sum: value('gateway_telemetry_batch_records_sum'), gc }
}

const recordsPerBatch = (a, b) => a && b && b.count > a.count ? (b.sum - a.sum) / (b.count - a.count) : undefined

installCleanupHandlers()
if (PIN) pinSelf(LOAD_CPU)
ensureWrk(log)
const dir = tempDir('cpu-ab-')
let infra
try {
  const busEnv = { BUS }
  if (BUS === 'kafka') {
    // CPU_AB_KAFKA_BROKERS: a broker of your own (pinned with the load), kept between runs.
    const brokers = process.env.CPU_AB_KAFKA_BROKERS ?? (infra = await startInfra({ cpu: LOAD_CPU, log })).brokers
    const warm = num('CPU_AB_KAFKA_WARMUP', infra ? 20 : 0)
    if (warm > 0) await warmKafka({ brokers, seconds: warm, cpu: SERVER_CPU, bodyFile: join(REPO_DIR, 'test', 'fixtures', 'asset-track.json'), log })
    busEnv.KAFKA_BROKERS = brokers
  }
  const clientsFile = join(dir, 'clients.json')
  writeFileSync(clientsFile, JSON.stringify([CLIENT]))
  // The Go peer checks tokens with a public key, as in the telemetry scenario.
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const publicKeyFile = join(dir, 'jwt-public.pem')
  writeFileSync(publicKeyFile, keys.publicKey.export({ type: 'spki', format: 'pem' }))
  for (const v of variants) {
    if (v.reference && SCENARIO === 'runs') {
      v.server = await startServer({
        label: v.label,
        cmd: process.execPath,
        args: [join(REPO_DIR, 'bench', 'baselines', 'runs-uws.mjs')],
        cwd: REPO_DIR,
        cpu: SERVER_CPU,
        dir,
        env: { ...process.env, HOST: '127.0.0.1', PORT: '0', MODE: 'lmdb-run', DATA_DIR: tempDir('cpu-ab-data-'), ...v.env },
        ready: listeningLine('runs-uws listening')
      })
      v.request = runsRequest()
      v.runs = []
      continue
    }
    if (v.reference) {
      const env = { KAFKA_BROKERS: busEnv.KAFKA_BROKERS, JWT_PUBLIC_KEY_FILE: publicKeyFile, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, TOPIC: `cpu-ab.${v.label}.telemetry`, LINGER_MS: '5', ...v.env }
      v.server = await goPeer({ label: v.label, env }).start({ log, tmpDir: dir, serverCpu: SERVER_CPU })
      v.request = telemetryRequest(signToken(keys.privateKey, 'bench-key'))
      v.runs = []
      continue
    }
    // The runs scenario's gateway is the harness alone, on HARNESS_PORT, as in `npm run bench runs`.
    const runs = SCENARIO === 'runs'
    const env = { ...process.env, HOST: '127.0.0.1', PORT: '0', HARNESS_PORT: '0', DATA_DIR: tempDir('cpu-ab-data-'), LOG_LEVEL: 'info', AUTH_CLIENTS_FILE: clientsFile, AUTH_ISSUER: ISSUER, ...busEnv, ...(runs ? { ROLES: 'harness' } : {}), ...v.env }
    const portVar = runs ? 'HARNESS_PORT' : 'PORT'
    const logsListening = ['info', 'debug', 'trace'].includes(env.LOG_LEVEL)
    if (!logsListening) env[portVar] = String(20000 + Math.floor(Math.random() * 20000))
    prepareRuntime(v.runtime, log)
    v.node = nodeVersion(v.runtime)
    const [cmd, args] = nodeCommand(v.runtime, [...(v.env.NODE_ARGS ?? '').split(' ').filter(Boolean), join(v.dir, 'bin', 'gateway.js'), 'start'])
    v.server = await startServer({
      label: v.label,
      cmd,
      args,
      cwd: v.dir,
      cpu: SERVER_CPU,
      dir,
      env,
      ready: listeningLine('gateway listening', runs ? 'harnessPort' : 'port'),
      readyHttp: logsListening ? undefined : { port: Number(env[portVar]), path: '/health' }
    })
    v.request = runs ? runsRequest() : telemetryRequest(await login(v.server.url))
    v.runs = []
  }
  for (const v of variants.filter(v => v.node)) log(`${v.label}: Node ${v.node}`)
  log(`${variants.length} variants, ${SCENARIO}, bus ${BUS}, ${RATE > 0 ? `${RATE} req/s paced` : 'closed loop'}, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${WARMUP}+${SECONDS} s`)
  for (let round = 1; round <= ROUNDS; round++) {
    for (const v of variants) {
      const wrk = duration => runWrk({ url: v.server.url, request: v.request, duration, connections: CONNECTIONS, threads: 1, timeoutSeconds: 2, cpu: LOAD_CPU, dir })
      if (WARMUP > 0) await wrk(WARMUP)
      const b0 = await gatewayStats(v)
      const t0 = threadSeconds(v.server.pid)
      const c0 = cpuSeconds(v.server.pid)
      const sys = sampleSystem()
      const r = await wrk(SECONDS)
      const c1 = cpuSeconds(v.server.pid)
      const t1 = threadSeconds(v.server.pid)
      const s = sys.stop()
      const srvBusy = (c1 - c0) / SECONDS
      const run = {
        reqPerSec: r.reqPerSec,
        p50: r.latency.p50,
        p99: r.latency.p99,
        usPerReq: (c1 - c0) / r.requests * 1e6,
        mainUsPerReq: ((t1.main ?? 0) - (t0.main ?? 0)) / r.requests * 1e6,
        threads: Object.fromEntries(Object.keys(t1).map(k => [k, (t1[k] - (t0[k] ?? 0)) / r.requests * 1e6]).filter(([, us]) => us >= 0.5)),
        srvBusy,
        othersOnServerCpu: SERVER_CPU === undefined ? undefined : Math.max(0, (s?.perCpuBusy?.[SERVER_CPU] ?? 0) - srvBusy),
        errors: r.non2xx3xx + r.socketErrorCount,
        ...await gatewayStats(v).then(b1 => ({ perBatch: recordsPerBatch(b0, b1), gcUsPerReq: b1 && (b1.gc - b0.gc) / r.requests * 1e6 }))
      }
      v.runs.push(run)
      log(`  round ${round} ${v.label}: ${Math.round(run.reqPerSec)} req/s, p99 ${run.p99.toFixed(1)} ms, ${run.usPerReq.toFixed(1)} µs/req (main ${run.mainUsPerReq.toFixed(1)}), srv ${Math.round(srvBusy * 100)}%, others on its CPU ${Math.round((run.othersOnServerCpu ?? 0) * 100)}%${run.gcUsPerReq === undefined ? '' : `, GC ${run.gcUsPerReq.toFixed(1)} µs/req`}${run.perBatch ? `, ${run.perBatch.toFixed(1)} records a send` : ''}${run.errors ? `, ${run.errors} errors` : ''}`)
    }
  }
  const m = (v, key) => median(v.runs.map(r => r[key]))
  console.log(`\n${SCENARIO}, bus ${BUS}, ${RATE > 0 ? `${RATE} req/s` : 'closed loop'}, ${CONNECTIONS} conns, ${ROUNDS} × ${SECONDS} s (medians; µs/req per round)`)
  console.log(['variant'.padEnd(14), 'req/s'.padStart(7), 'p50 ms'.padStart(7), 'p99 ms'.padStart(7), 'µs/req'.padStart(7), 'main'.padStart(6), 'others%'.padStart(7), '/send'.padStart(6), 'GC'.padStart(6), '  per round'].join(' '))
  for (const v of variants) {
    console.log([v.label.padEnd(14), String(Math.round(m(v, 'reqPerSec'))).padStart(7), m(v, 'p50').toFixed(2).padStart(7), m(v, 'p99').toFixed(2).padStart(7), m(v, 'usPerReq').toFixed(1).padStart(7), m(v, 'mainUsPerReq').toFixed(1).padStart(6), String(Math.round(100 * m(v, 'othersOnServerCpu'))).padStart(7), (v.runs.every(r => r.perBatch) ? m(v, 'perBatch').toFixed(1) : '-').padStart(6), (v.reference ? '-' : m(v, 'gcUsPerReq').toFixed(1)).padStart(6), '  ' + v.runs.map(r => r.usPerReq.toFixed(0)).join(' ')].join(' '))
  }
  const reference = variants.find(v => v.reference)
  if (reference) {
    console.log(`\n${SCENARIO === 'runs' ? 'CPU per run' : 'per core'} vs ${reference.label} (its µs/req over the variant's, round by round; ≥ 1.00× beats it${SCENARIO === 'runs' ? ', ≥ 0.90× is issue 15\'s target' : ''}):`)
    for (const v of variants.filter(v => !v.reference)) {
      const ratios = v.runs.map((r, i) => reference.runs[i].usPerReq / r.usPerReq)
      console.log(`  ${v.label.padEnd(14)} median ${median(ratios).toFixed(2)}×  rounds ${ratios.map(x => x.toFixed(2)).join(' ')}`)
    }
  }
  const threads = {}
  for (const v of variants) for (const r of v.runs) for (const k of Object.keys(r.threads)) threads[k] = true
  const perThread = v => Object.keys(threads).map(k => [k, median(v.runs.map(r => r.threads[k] ?? 0))]).filter(([, us]) => us >= 0.05)
  console.log('\nper thread, µs/req (medians): ' + variants.map(v => `${v.label}: ` + perThread(v).map(([k, us]) => `${k} ${us.toFixed(1)}`).join(', ')).join(' | '))
  for (const v of variants) await v.server.stop()
} finally {
  await infra?.stop()
}
