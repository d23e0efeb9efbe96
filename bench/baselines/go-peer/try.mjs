// Standalone try-out of the Go peer beside the gateway, until the telemetry
// scenario runs it (see README.md):
//
//   npm run build && node bench/baselines/go-peer/try.mjs
//
// 1. a private Kafka (scripts/infra.sh, its own run dir, pinned to CPU1 with
//    the load generator), warmed up;
// 2. the gateway (BUS=kafka) and the Go peer (fasthttp and net/http fronts
//    with the compiled validator, fasthttp with the jsonschema library), each
//    pinned to CPU0, the peer checking tokens against the gateway's
//    /.well-known/jwks.json, so one login serves both;
// 3. checks: every case of cases.mjs to both, answers compared; the accepted
//    ones' Kafka messages compared;
// 4. load: wrk (CPU1) on each in turn, req/s, p50/p99 and server CPU per request;
// 5. after stopping: every 200 the peer answered is a record in its topic
//    (and the same for the gateway), every record with the message's shape.
//
// Knobs: TRY_DURATION (15 s), TRY_WARMUP (3 s), TRY_CONNECTIONS (50),
// TRY_KAFKA_WARMUP (15 s), TRY_TARGETS (bare-uws-json,gateway,go-peer,go-peer-nethttp,go-peer-jsonschema),
// TRY_ROUNDS (1: each target measured once; more: the targets take turns,
// medians printed), TRY_LOAD=0 (checks only), TRY_KAFKA_BROKERS (use that broker, no private one),
// TRY_CPU_PROFILE=1 (the peers' pprof profiles into bench/results/profiles/),
// and the Go peer's own (LINGER_MS, BATCH_MAX_BYTES, COMPRESSION) pass through.
import { randomUUID } from 'node:crypto'
import { writeFileSync, readFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { installCleanupHandlers, pinSelf, tempDir, hasTaskset } from '../../lib/procs.mjs'
import { startInfra, warmKafka } from '../../lib/infra.mjs'
import { gateway, baseline, checkBuild } from '../../lib/targets.mjs'
import { REPO_DIR } from '../../lib/paths.mjs'
import { ensureWrk, runWrk } from '../../lib/wrk.mjs'
import { sampleProcess, sampleSystem } from '../../lib/sampler.mjs'
import { AUDIENCE, CLIENT, login } from '../../lib/login.mjs'
import { goPeer, buildGoPeer, countTopic } from '../../lib/go-peer.mjs'
import { cases, send, BASE_HEADERS, compareAnswers, compareMessages } from './cases.mjs'

const num = (name, def) => (process.env[name] ? Number(process.env[name]) : def)
const DURATION = num('TRY_DURATION', 15)
const WARMUP = num('TRY_WARMUP', 3)
const CONNECTIONS = num('TRY_CONNECTIONS', 50)
const KAFKA_WARMUP = num('TRY_KAFKA_WARMUP', 15)
const ROUNDS = num('TRY_ROUNDS', 1)
const LOAD = process.env.TRY_LOAD !== '0'
const PROFILE = process.env.TRY_CPU_PROFILE === '1'
const RESULTS_DIR = join(REPO_DIR, 'bench', 'results')
const PROFILE_DIR = join(RESULTS_DIR, 'profiles')
// The peer's variants: [label, HTTP_SERVER, VALIDATOR].
const PEERS = [['go-peer', 'fasthttp', 'compiled'], ['go-peer-nethttp', 'nethttp', 'compiled'], ['go-peer-jsonschema', 'fasthttp', 'jsonschema']]
const TARGETS = (process.env.TRY_TARGETS ?? ['bare-uws-json', 'gateway', ...PEERS.map(p => p[0])].join(',')).split(',').map(s => s.trim())
const PIN = hasTaskset()
const SERVER_CPU = PIN ? 0 : undefined
const LOAD_CPU = PIN ? 1 : undefined
const PATH = '/v1/asset/track'
const BODY = readFileSync(join(REPO_DIR, 'test', 'fixtures', 'asset-track.json'))
const NO_SCOPE = { client_id: 'noscope', client_secret: 'noscope-secret', audiences: [AUDIENCE], scopes: ['stream:write'] }

const log = line => process.stderr.write(line + '\n')
const failures = []

installCleanupHandlers()
if (PIN) pinSelf(LOAD_CPU)
ensureWrk(log)
checkBuild(log)
buildGoPeer(log)

const dir = tempDir('go-peer-try-')
if (PROFILE) mkdirSync(PROFILE_DIR, { recursive: true })
const ctx = { tmpDir: dir, serverCpu: SERVER_CPU, log, warn: log, settings: { logLevel: 'info' }, nodeArgsFor: () => [] }
const run = randomUUID().slice(0, 8)
const topics = Object.fromEntries(['gateway', ...PEERS.map(p => p[0])].map(label => [label, `try.${label}.${run}`]))

let infra
const brokers = process.env.TRY_KAFKA_BROKERS ?? (infra = await startInfra({ cpu: LOAD_CPU, log })).brokers
try {
  if (infra && KAFKA_WARMUP > 0) await warmKafka({ brokers, seconds: KAFKA_WARMUP, cpu: SERVER_CPU, bodyFile: join(REPO_DIR, 'test', 'fixtures', 'asset-track.json'), log })
  const clientsFile = join(dir, 'clients.json')
  writeFileSync(clientsFile, JSON.stringify([CLIENT, NO_SCOPE]))
  const gw = await gateway({
    env: { BUS: 'kafka', KAFKA_BROKERS: brokers, AUTH_CLIENTS_FILE: clientsFile, TOPIC_TELEMETRY: topics.gateway, TOPIC_EVIDENCE: `try.evidence.${run}`, TOPIC_RUNS: `try.runs.${run}` }
  }).start(ctx)
  const token = await login(gw.url)
  const noScopeToken = await loginAs(gw, NO_SCOPE)
  const peers = {}
  for (const [label, http, validator] of PEERS) {
    if (!TARGETS.includes(label)) continue
    const profile = PROFILE ? { CPU_PROFILE: join(PROFILE_DIR, `go-peer-try-${label}-${run}.pprof`) } : {}
    peers[label] = await goPeer({ label, env: { KAFKA_BROKERS: brokers, TOPIC: topics[label], JWKS_URL: `${gw.url}/.well-known/jwks.json`, HTTP_SERVER: http, VALIDATOR: validator, ...profile } }).start(ctx)
  }
  log(`gateway ${gw.url}, ${Object.entries(peers).map(([l, p]) => `${l} ${p.url}`).join(', ')}`)

  await checkAnswers(gw, peers, token, noScopeToken)

  const rounds = [] // one list of rows per round; the targets take turns within each
  if (LOAD) {
    const headers = { ...BASE_HEADERS(token), 'X-Request-Id': 'try-load' }
    const servers = { gateway: gw, ...peers }
    for (let round = 1; round <= ROUNDS; round++) {
      if (ROUNDS > 1) log(`round ${round} of ${ROUNDS}`)
      const rows = []
      for (const label of TARGETS) {
        if (label === 'bare-uws-json') {
          const bare = await baseline({ label, script: 'bare-uws-json.mjs' }).start(ctx)
          rows.push(await measure(label, bare, headers))
          await bare.stop()
        } else if (servers[label]) rows.push(await measure(label, servers[label], headers))
      }
      rounds.push(rows)
    }
  }

  // Stop, then hold each server's 200s against its topic.
  await gw.stop()
  const gwStatuses = trackStatuses(gw.logFile)
  // A request the client gave up on (499, as wrk does at its end) may still have been published.
  await verifyTopic('gateway', topics.gateway, gwStatuses['200'] ?? 0, gwStatuses, gwStatuses['499'] ?? 0)
  for (const [label, peer] of Object.entries(peers)) {
    await peer.stop()
    const stopped = readFileSync(peer.logFile, 'utf8').trim().split('\n').map(l => { try { return JSON.parse(l) } catch { return {} } }).find(l => l.msg === 'go-peer stopped')
    if (!stopped) { failures.push(`${label}: no "go-peer stopped" line`); continue }
    await verifyTopic(label, topics[label], stopped.answered['200'] ?? 0, stopped.answered)
    if (PROFILE) console.log(`  ${label}: CPU profile in ${peer.env?.CPU_PROFILE ?? join(PROFILE_DIR, `go-peer-try-${label}-${run}.pprof`)} (go tool pprof -top ${buildGoPeer()} <file>)`)
  }

  if (rounds.length > 0) printTable(rounds)
} finally {
  await infra?.stop()
}
if (failures.length > 0) {
  console.log(`\n${failures.length} check(s) FAILED:\n  - ${failures.join('\n  - ')}`)
  process.exit(1)
}
console.log('\nall checks passed')

async function loginAs (server, client) {
  const res = await fetch(new URL('/api/v1/login', server.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, audience: AUDIENCE })
  })
  const body = await res.json()
  if (res.status !== 200) throw new Error(`login ${client.client_id}: ${res.status} ${JSON.stringify(body)}`)
  return body.access_token
}

async function checkAnswers (gw, peers, token, noScopeToken) {
  const published = [] // request ids of accepted records
  let n = 0
  console.log(`\nchecks: ${cases().length} requests to the gateway and to ${Object.keys(peers).join(' and ')}`)
  for (const c of cases()) {
    const requestId = `try-${run}-${++n}`
    const headers = { ...BASE_HEADERS(token), 'X-Request-Id': requestId, ...(c.headers?.(token, { noScopeToken }) ?? {}) }
    for (const k of Object.keys(headers)) if (headers[k] === undefined) delete headers[k]
    const want = await send(gw.url, PATH, headers, c.body)
    let line = `  ${want.status} ${c.name}`
    for (const [label, peer] of Object.entries(peers)) {
      const got = await send(peer.url, PATH, headers, c.body)
      const { problems, notes } = compareAnswers(want, got)
      for (const p of problems) failures.push(`${label}, ${c.name}: ${p}`)
      line += problems.length ? `  ✗ ${label}: ${problems.join('; ')}` : notes.length ? `  (${label}: ${notes.join('; ')})` : ''
    }
    console.log(line + (want.status === 400 ? `  ${JSON.stringify(JSON.parse(want.body).errors)}` : want.status !== 200 ? `  ${want.body}` : ''))
    if (c.publish && want.status !== 200) failures.push(`${c.name}: expected 200 from the gateway, got ${want.status} ${want.body}`)
    if (want.status === 200) published.push({ name: c.name, requestId })
  }
  // The messages: dump the topics (they hold only these records yet) and compare by request id.
  const byId = topic => new Map(countTopic({ brokers, topic, dump: true }).messages.map(m => [m.headers['x-request-id'], m]))
  const gwMessages = byId(topics.gateway)
  for (const label of Object.keys(peers)) {
    const peerMessages = byId(topics[label])
    for (const p of published) {
      const problems = compareMessages(gwMessages.get(p.requestId), peerMessages.get(p.requestId))
      for (const problem of problems) failures.push(`${label}, message of "${p.name}": ${problem}`)
    }
    console.log(`  ${label}: ${published.length} published messages compared with the gateway's`)
  }
}

async function measure (label, server, headers) {
  const request = { method: 'POST', path: PATH, headers, body: BODY }
  const wrk = opts => runWrk({ url: server.url, request, connections: CONNECTIONS, threads: 1, timeoutSeconds: 2, cpu: LOAD_CPU, dir, ...opts })
  log(`  ${label}: warm-up ${WARMUP} s, then ${DURATION} s, ${CONNECTIONS} connections`)
  if (WARMUP > 0) await wrk({ duration: WARMUP })
  const sampler = sampleProcess(server.pid)
  const system = sampleSystem()
  const r = await wrk({ duration: DURATION })
  const s = sampler.stop()
  const sys = system.stop()
  const row = { label, reqPerSec: r.reqPerSec, p50: r.latency.p50, p99: r.latency.p99, requests: r.requests, errors: r.non2xx3xx + r.socketErrorCount, serverCpu: s.cpuFraction, cpuUsPerReq: s.cpuSeconds / r.requests * 1e6, loadCpu: sys?.perCpuBusy?.[LOAD_CPU], othersOnServerCpu: SERVER_CPU === undefined ? undefined : Math.max(0, (sys?.perCpuBusy?.[SERVER_CPU] ?? 0) - s.cpuFraction), rss: s.peakRssBytes }
  if (row.errors > 0) failures.push(`${label}: wrk saw ${r.non2xx3xx} non-2xx answers and ${r.socketErrorCount} socket errors`)
  return row
}

/** Status counts of the gateway's access-log lines for the track route (its log also has the logins). */
function trackStatuses (file) {
  const statuses = {}
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"msg":"request"') || !line.includes(`"route":"${PATH}"`)) continue
    const status = /"status":(\d{3})/.exec(line)?.[1]
    if (status) statuses[status] = (statuses[status] ?? 0) + 1
  }
  return statuses
}

async function verifyTopic (label, topic, ok, statuses, abandoned = 0) {
  const c = countTopic({ brokers, topic })
  console.log(`  ${label}: answered ${JSON.stringify(statuses)}; topic ${topic} holds ${c.records} records, ${c.bad} without the message's shape`)
  if (c.records < ok || c.records > ok + abandoned) failures.push(`${label}: ${ok} answers 200${abandoned ? ` (and ${abandoned} abandoned)` : ''} but ${c.records} records in ${topic}`)
  if (c.bad > 0) failures.push(`${label}: ${c.bad} malformed records, first: ${c.firstBad}`)
}

/** One row per target: the median over the rounds (a busy machine moves single runs a lot), with the spread of CPU µs/req. */
function printTable (rounds) {
  const median = list => { const v = list.filter(x => x !== undefined).sort((a, b) => a - b); return v.length ? (v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2) : undefined }
  const labels = rounds[0].map(r => r.label)
  const rows = labels.map(label => {
    const runs = rounds.map(rows => rows.find(r => r.label === label))
    const m = key => median(runs.map(r => r[key]))
    return { label, reqPerSec: m('reqPerSec'), p50: m('p50'), p99: m('p99'), serverCpu: m('serverCpu'), cpuUsPerReq: m('cpuUsPerReq'), loadCpu: m('loadCpu'), othersOnServerCpu: m('othersOnServerCpu'), rss: Math.max(...runs.map(r => r.rss)), spread: runs.map(r => r.cpuUsPerReq) }
  })
  const bare = rows.find(r => r.label === 'bare-uws-json')?.reqPerSec
  const peer = rows.find(r => r.label === 'go-peer')?.reqPerSec
  const peerUs = rows.find(r => r.label === 'go-peer')?.cpuUsPerReq
  const cols = [
    ['target', r => r.label, 'l'], ['req/s', r => Math.round(r.reqPerSec)], ['p50 ms', r => r.p50?.toFixed(2)], ['p99 ms', r => r.p99?.toFixed(2)],
    ['srv CPU', r => `${Math.round(r.serverCpu * 100)}%`], ['CPU µs/req', r => r.cpuUsPerReq.toFixed(0)], ...(rounds.length > 1 ? [['µs/req per round', r => r.spread.map(v => v.toFixed(0)).join(' ')]] : []), ['load CPU', r => r.loadCpu === undefined ? '-' : `${Math.round(r.loadCpu * 100)}%`], ['others on srv CPU', r => r.othersOnServerCpu === undefined ? '-' : `${Math.round(r.othersOnServerCpu * 100)}%`],
    ['peak RSS', r => `${Math.round(r.rss / 1048576)} MiB`], ['vs bare', r => (bare ? (r.reqPerSec / bare).toFixed(2) + '×' : '-')], ['vs go-peer', r => (peer ? (r.reqPerSec / peer).toFixed(2) + '×' : '-')],
    ['per core vs go-peer', r => (peerUs ? (peerUs / r.cpuUsPerReq).toFixed(2) + '×' : '-')]
  ]
  const cells = rows.map(r => cols.map(([, get]) => String(get(r))))
  const widths = cols.map(([title], i) => Math.max(title.length, ...cells.map(c => c[i].length)))
  const fmtRow = vals => vals.map((v, i) => (cols[i][2] === 'l' ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('   ')
  console.log(`\nPOST ${PATH}, test/fixtures/asset-track.json (${BODY.length} B), ${CONNECTIONS} connections, ${DURATION} s${rounds.length > 1 ? ` × ${rounds.length} rounds (medians)` : ''}, 1 wrk thread; ${PIN ? `server on CPU${SERVER_CPU}, wrk and Kafka on CPU${LOAD_CPU}` : 'not pinned'}`)
  console.log(fmtRow(cols.map(([t]) => t)))
  for (const c of cells) console.log(fmtRow(c))
  console.log('(per core vs go-peer: requests per CPU-second of the server, against go-peer\'s)')
  mkdirSync(RESULTS_DIR, { recursive: true })
  const file = join(RESULTS_DIR, `go-peer-try-${new Date().toISOString().replace(/:/g, '-')}.json`)
  writeFileSync(file, JSON.stringify({ settings: { DURATION, WARMUP, CONNECTIONS, ROUNDS, pinned: PIN }, medians: rows, rounds }, null, 2) + '\n')
  console.log(`results: ${file}`)
}
