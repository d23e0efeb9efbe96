// POST /v1/asset/track with the spec's full example record
// (test/fixtures/asset-track.json), on the gateway with Kafka (acks=all) and
// with the local bus, beside three baselines measured in the same run:
//
//   bare-uws-json    bench/baselines/bare-uws-json.mjs: the same uWS build,
//                    body read, JSON.parse, 200 with the same body; nothing else
//   fastify-kafkajs  bench/baselines/fastify-kafkajs.mjs: Fastify 5 + kafkajs
//                    doing the gateway's work (JWT, ajv with the gateway's
//                    schema, one acks=all send per request)
//   go-peer          bench/baselines/go-peer: Go, fasthttp + franz-go doing
//                    the same work (the same schema, token rules and cache,
//                    the same message bytes), batched with a 5 ms linger,
//                    acks=all: the strongest peer, built with `go build`
//   gateway-kafka    BUS=kafka against a private broker (scripts/infra.sh with
//                    its own run dir), then again at a fixed rate (70% of its
//                    peak) for the p99 at that load
//   gateway-local    BUS=local (LMDB log, commit per batch)
//   bare-uws-batch   bench/baselines/bare-uws-batch.mjs: POST /v1/asset/track:batch
//                    with BENCH_BATCH_RECORDS (100) NDJSON records, each given
//                    the gateway's own per-record work and nothing else: the
//                    ceiling of the batch route
//   go-peer-batch    the Go peer's batch route (go-peer/batch.go), gzip, the same batches
//   gateway-kafka-batch  the same batches through the gateway, Kafka acks=all,
//                    gzip (KAFKA_COMPRESSION's default); then at 70% of its
//                    peak. Its rec/s is req/s × records per request
//   kafkajs-batch    bench/baselines/kafkajs-produce.mjs: kafkajs alone on the
//                    server's core producing a batch's records (gzip,
//                    acks=all), no HTTP: the bus ceiling (telemetry/bus-ceiling.mjs)
//   gateway-kafka-stream  the WebSocket stream, BENCH_STREAMS streams of
//                    BENCH_STREAM_RECORDS record(s) a message, driven by
//                    bench/baselines/stream-client.mjs (telemetry/stream.mjs);
//                    then at 70% of its peak
//
// Kafka runs pinned to the load generator's CPU (BENCH_KAFKA_CPU), so the
// server under test keeps its core to itself; see bench/README.md.
import { generateKeyPairSync } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gateway, bareUws, fastifyKafkajs } from '../lib/targets.mjs'
import { TELEMETRY_TARGETS as TARGETS } from '../lib/goals.mjs'
import { goPeer } from '../lib/go-peer.mjs'
import { startInfra, warmKafka } from '../lib/infra.mjs'
import { luaScript, pacedLua, parsePaced } from '../lib/wrk.mjs'
import { WRK_COLUMNS } from '../lib/report.mjs'
import { fmt } from '../lib/format.mjs'
import { logSize, accessLogStats, formatStatuses, formatProblems, unexpectedStatuses } from '../lib/logs.mjs'
import { interrupted } from '../lib/procs.mjs'
import { AUDIENCE, CLIENT, ISSUER, login, signToken } from '../lib/login.mjs'
import { numberEnv, companionCpu } from '../lib/env.mjs'
import { boundKind, boundNote, cpuShares, littlesLaw, loadCoreBusy, verdict } from '../lib/verdicts.mjs'
import { REPO_DIR } from '../lib/paths.mjs'
import { figure, figuresOf, wrkFigures } from '../lib/figures.mjs'
import { streamRows } from './telemetry/stream.mjs'
import { kafkajsRow } from './telemetry/bus-ceiling.mjs'

const FIXTURE = 'test/fixtures/asset-track.json'
const BODY = readFileSync(join(REPO_DIR, FIXTURE)) // sent as is, byte for byte
const PATH = '/v1/asset/track'
const BATCH_PATH = '/v1/asset/track:batch'
const KAFKA_TARGETS = ['fastify-kafkajs', 'go-peer', 'gateway-kafka', 'go-peer-batch', 'gateway-kafka-batch', 'gateway-kafka-stream', 'kafkajs-batch']

/** NDJSON of `n` records: the example record on one line, each with its own asset_id. */
function batchBody (n) {
  const record = JSON.parse(BODY.toString())
  return Buffer.from(Array.from({ length: n }, (_, i) => JSON.stringify({ ...record, asset_id: `truck-${i}` })).join('\n') + '\n')
}

function knobs (settings) {
  return {
    // Where Kafka (and the idle MinIO infra.sh starts with it) runs.
    kafkaCpu: companionCpu('BENCH_KAFKA_CPU', settings),
    pacedLoad: numberEnv('BENCH_PACED_LOAD', 0.7, n => n > 0 && n <= 1),
    pacedConnections: numberEnv('BENCH_PACED_CONNECTIONS', 300, n => Number.isInteger(n) && n >= 1),
    // Seconds of load on the fresh broker before any target is measured (its JIT).
    kafkaWarmup: numberEnv('BENCH_KAFKA_WARMUP', 30, n => Number.isInteger(n) && n >= 0),
    batchRecords: numberEnv('BENCH_BATCH_RECORDS', 100, n => Number.isInteger(n) && n >= 1 && n <= 1000),
    streams: numberEnv('BENCH_STREAMS', 4, n => Number.isInteger(n) && n >= 1 && n <= 8),
    streamRecords: numberEnv('BENCH_STREAM_RECORDS', 1, n => Number.isInteger(n) && n >= 1 && n <= 500),
    streamInFlight: numberEnv('BENCH_STREAM_IN_FLIGHT', 250, n => Number.isInteger(n) && n >= 1)
  }
}

function request (token, batch) {
  return {
    method: 'POST',
    path: batch ? BATCH_PATH : PATH,
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': batch ? 'application/x-ndjson' : 'application/json',
      'X-Request-Id': 'bench-telemetry',
      'X-Request-Timestamp': '1763799330'
    },
    body: batch ?? BODY,
    expectStatus: s => s === 200
  }
}

/** A sentence on what limits a closed-loop row, from the CPU figures. */
function bound (r, ctx, connections) {
  if (r.serverCpu === undefined || !r.reqPerSec) return undefined
  const kafka = r.companionCpu?.kafka
  const kind = boundKind({ serverCpu: r.serverCpu, loadCpu: loadCoreBusy(r, ctx), othersCpu: r.othersCpu }, ctx.settings.busyThreshold)
  const shares = cpuShares(ctx, r, { loads: [['wrk', r.wrkCpu], ['Kafka', kafka]] })
  const brokerToo = kafka >= 0.2 ? '; the broker shares the load core with wrk: with Kafka on a core of its own the figure could be higher' : ''
  const more = {
    busy: '',
    both: `: the server's figure is a lower bound${brokerToo}`,
    server: '; more req/s needs less work per request',
    load: brokerToo,
    waiting: `: ${littlesLaw(connections, r.reqPerSec)}` +
      (r.label.includes('kafka') ? ', largely waiting for the broker\'s acks=all acknowledgment' : r.label === 'gateway-local' ? ', largely waiting for the LMDB commit of its batch' : '') +
      '; more connections (BENCH_CONNECTIONS) would show the CPU ceiling'
  }
  return boundNote(kind, r, shares, more[kind])
}

/** The fixed-rate run right after a closed-loop one, on the same server: `load` × its req/s. */
async function pacedRun (ctx, server, req, row, k, companions) {
  const { settings } = ctx
  const rate = Math.max(1, Math.round(row.reqPerSec * k.pacedLoad))
  const pacedReq = { ...req, lua: luaScript({ method: req.method, body: req.body }) + pacedLua({ ratePerThread: rate / settings.threads }) }
  ctx.log(`  ${row.label}: paced at ${rate} req/s (${Math.round(k.pacedLoad * 100)}% of ${Math.round(row.reqPerSec)}), ${k.pacedConnections} connections`)
  const paced = await ctx.measure(server, pacedReq, { companions, wrk: { connections: Math.max(k.pacedConnections, settings.threads) } })
  paced.label = `${row.label}@${Math.round(k.pacedLoad * 100)}%`
  paced.paced = { targetReqPerSec: rate, load: k.pacedLoad, of: row.reqPerSec, connections: k.pacedConnections, ...parsePaced(paced.wrk?.output) }
  const p = paced.paced
  paced.notes.push(`fixed rate ${p.targetReqPerSec} req/s (${Math.round(p.load * 100)}% of ${Math.round(p.of)}) over ${p.connections} connections with wrk's delay() hook: ` +
    `${Math.round(paced.reqPerSec)} req/s done, server ${fmt.pct(paced.serverCpu)} of its core` +
    (p.sends === undefined ? '; no pacing report from wrk' : `; ${p.late} of ${p.sends} sends late by > ${p.lateMs} ms (max ${p.maxLagMs.toFixed(1)} ms)`))
  if (paced.reqPerSec < 0.95 * p.targetReqPerSec) paced.notes.push(`did not hold the rate (${Math.round(paced.reqPerSec)} of ${p.targetReqPerSec} req/s): the server fell behind, its latencies are optimistic`)
  else if (p.sends !== undefined && p.late > 0.01 * p.sends) paced.notes.push('more than 1% of sends were late (no free connection): latencies leave that wait out; raise BENCH_PACED_CONNECTIONS')
  return paced
}

/**
 * Status counts of a row's stretch of the access log, noted when anything
 * but 200 shows up. wrk closes its connections with requests in flight when
 * it stops: the server logs those as 499 (client gone), at most one per
 * connection per wrk run.
 */
function accessLogNote (r, settings) {
  const stats = r.accessLog
  const runs = settings.warmup > 0 ? 2 : 1
  const conns = r.paced ? r.paced.connections : settings.connections
  stats.expected499 = runs * conns
  const others = unexpectedStatuses(stats.statuses, ['200', '499'])
  if (Object.keys(others).length > 0 || (stats.statuses['499'] ?? 0) > stats.expected499 || stats.problems.length > 0) {
    r.notes.push(`access log (${r.paced ? 'paced run' : 'probe, warm-up and measured run'}): ${formatStatuses(stats.statuses)}` +
      (stats.problems.length ? `; warn/error lines: ${formatProblems(stats.problems)}` : ''))
  }
}

export default {
  name: 'telemetry',
  description: 'POST /v1/asset/track, full example record: gateway with Kafka acks=all and local bus beside bare uWS + JSON.parse, Fastify + kafkajs and the Go peer (fasthttp + franz-go)',
  baseline: 'bare-uws-json',
  // Beside wrk's figures, acknowledged records a second: a batch or a stream message carries many.
  figures: rows => [...wrkFigures(rows), ...figuresOf(rows, r => [figure(r, 'records', 'rec/s', r.label, 'rec/s', r.recordsPerSec)])],
  headline (settings) {
    const k = knobs(settings)
    const kafka = settings.targets.length > 0 && !settings.targets.some(t => KAFKA_TARGETS.includes(t))
      ? 'no Kafka'
      : `Kafka ${k.kafkaCpu === undefined ? 'not pinned' : `on CPU${k.kafkaCpu}`}`
    return `POST ${PATH} with ${FIXTURE} (${BODY.length} B); ${kafka}`
  },

  async run (ctx) {
    const { settings, log } = ctx
    const k = knobs(settings)
    const want = label => settings.targets.length === 0 || settings.targets.includes(label)
    const rows = []
    const notes = []

    // Auth material: a clients file for the gateway, a key pair and a token for the Fastify baseline.
    const clientsFile = join(ctx.tmpDir, 'clients.json')
    writeFileSync(clientsFile, JSON.stringify([CLIENT]))
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
    const publicKeyFile = join(ctx.tmpDir, 'jwt-public.pem')
    writeFileSync(publicKeyFile, publicKey.export({ type: 'spki', format: 'pem' }))
    const fastifyToken = signToken(privateKey, 'bench-key')

    let infra
    let infraError
    try {
      if (KAFKA_TARGETS.some(want)) {
        try {
          infra = await startInfra({ cpu: k.kafkaCpu, log })
        } catch (err) {
          // The rows without Kafka are still worth measuring.
          if (interrupted()) throw err
          infraError = `no Kafka: ${err.message}`
          ctx.warn(infraError)
        }
      }
      if (infra) notes.push(...await kafkaNotes(ctx, infra, k))
      const batch = batchBody(k.batchRecords)
      let companions = infra ? [{ label: 'kafka', pid: infra.kafkaPid }, { label: 'minio', pid: infra.minioPid }] : []
      const kafkaEnv = infra ? { BUS: 'kafka', KAFKA_BROKERS: infra.brokers } : {}
      const targets = [
        { target: bareUws({ label: 'bare-uws-json', script: 'bare-uws-json.mjs' }), request: async () => request('unused') },
        {
          target: fastifyKafkajs({ env: { KAFKA_BROKERS: infra?.brokers ?? '', JWT_PUBLIC_KEY_FILE: publicKeyFile, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE } }),
          request: async () => request(fastifyToken),
          logStats: true
        },
        {
          // Its own topic (created by the peer), so gateway-kafka's partition starts empty.
          target: goPeer({ env: { KAFKA_BROKERS: infra?.brokers ?? '', JWT_PUBLIC_KEY_FILE: publicKeyFile, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, TOPIC: 'bench.go-peer.telemetry', LINGER_MS: '5' } }),
          request: async () => request(fastifyToken),
          logStats: true
        },
        {
          target: gateway({ label: 'gateway-kafka', env: { ...kafkaEnv, AUTH_CLIENTS_FILE: clientsFile, AUTH_ISSUER: ISSUER } }),
          request: async server => request(await login(server.url)),
          logStats: true,
          paced: true
        },
        // The bus's ceiling for the batch and stream rows: no server, kafkajs alone on the server's core.
        { target: { label: 'kafkajs-batch', kind: 'baseline' }, bus: true },
        { target: bareUws({ label: 'bare-uws-batch', script: 'bare-uws-batch.mjs' }), request: async () => request('unused', batch), records: k.batchRecords },
        {
          // The same batches through the Go peer's batch route, gzipped as the gateway's are.
          target: goPeer({ label: 'go-peer-batch', env: { KAFKA_BROKERS: infra?.brokers ?? '', JWT_PUBLIC_KEY_FILE: publicKeyFile, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, TOPIC: 'bench.go-peer.telemetry', LINGER_MS: '5', COMPRESSION: 'gzip' } }),
          request: async () => request(fastifyToken, batch),
          logStats: true,
          records: k.batchRecords
        },
        {
          target: gateway({ label: 'gateway-kafka-batch', env: { ...kafkaEnv, AUTH_CLIENTS_FILE: clientsFile, AUTH_ISSUER: ISSUER } }),
          request: async server => request(await login(server.url), batch),
          logStats: true,
          paced: true,
          records: k.batchRecords
        },
        {
          target: gateway({ label: 'gateway-kafka-stream', env: { ...kafkaEnv, AUTH_CLIENTS_FILE: clientsFile, AUTH_ISSUER: ISSUER } }),
          stream: true
        },
        {
          target: gateway({ label: 'gateway-local', env: { BUS: 'local', AUTH_CLIENTS_FILE: clientsFile, AUTH_ISSUER: ISSUER } }),
          request: async server => request(await login(server.url)),
          logStats: true
        }
      ]
      for (const [i, t] of targets.entries()) {
        const label = t.target.label
        if (!want(label)) continue
        // Past the last Kafka row the broker only idles, on the load core: its
        // JVM's wake-ups there put 390 ms into the local row's p99 (16.6–18.5
        // ms with no broker), so it stops, as it would be absent beside a
        // local-bus gateway.
        if (infra && !targets.slice(i).some(later => KAFKA_TARGETS.includes(later.target.label) && want(later.target.label))) {
          await infra.stop()
          infra = undefined
          companions = []
          notes.push('Kafka and MinIO were stopped after the last Kafka row, before the rows that do not use them')
        }
        if (KAFKA_TARGETS.includes(label) && !infra) {
          rows.push({ label, error: infraError, problems: [infraError] })
          continue
        }
        log(`telemetry / ${label}`)
        const row = { label, baseline: t.target.kind === 'baseline' || undefined, problems: [], notes: [] }
        rows.push(row)
        let paced
        let at0
        let at1
        if (t.bus) {
          try {
            rows[rows.length - 1] = await kafkajsRow(ctx, { label, brokers: infra.brokers, kafkaPid: infra.kafkaPid, bodyFile: join(REPO_DIR, FIXTURE), perSend: k.batchRecords })
          } catch (err) {
            if (interrupted()) throw err
            Object.assign(row, { error: err.message, problems: [err.message] })
          }
          continue
        }
        if (t.stream) {
          await ctx.withServer(t.target, row, async server => {
            const [closed, ...more] = await streamRows(ctx, server, { label, token: await login(server.url), bodyFile: join(REPO_DIR, FIXTURE), k, companions })
            Object.assign(row, closed, { problems: [...row.problems, ...closed.problems], closedReqPerSec: closed.reqPerSec, records: k.streamRecords })
            for (const m of more) rows.push(Object.assign(m, { records: k.streamRecords }))
          })
          continue
        }
        await ctx.withServer(t.target, row, async server => {
          const req = await t.request(server)
          at0 = logSize(server.logFile)
          const m = await ctx.measure(server, req, { companions })
          Object.assign(row, m, { label, problems: [...row.problems, ...m.problems], closedReqPerSec: m.reqPerSec })
          at1 = logSize(server.logFile)
          row.records = t.records ?? 1
          if (t.paced && row.reqPerSec > 0) {
            rows.push(paced = await pacedRun(ctx, server, req, row, k, companions))
            paced.records = row.records
          }
        }, server => {
          if (!t.logStats) return
          row.accessLog = accessLogStats(server.logFile, at0, paced ? at1 : undefined)
          if (paced) paced.accessLog = accessLogStats(server.logFile, at1)
        })
      }
    } finally {
      await infra?.stop()
    }
    notes.push(...readRows(rows, ctx, k))
    const columns = [...WRK_COLUMNS]
    columns.splice(columns.findIndex(c => c.title === 'srv CPU') + 1, 0, { title: 'µs/req', get: r => fmt.int(r.cpuUsPerReq) },
      { title: 'rec/s', get: r => fmt.int(r.recordsPerSec) }, { title: 'µs/rec', get: r => r.cpuUsPerReq === undefined ? '' : (r.cpuUsPerReq / (r.records ?? 1)).toFixed(1) })
    columns.splice(columns.findIndex(c => c.title === 'wrk CPU') + 1, 0, { title: 'kafka CPU', get: r => fmt.pct(r.companionCpu?.kafka) })
    columns.splice(columns.findIndex(c => c.title === 'vs baseline'), 1,
      { title: 'vs bare-uws', get: r => fmt.ratio(r.vsBareUws) },
      { title: 'vs fastify', get: r => fmt.ratio(r.vsFastify) },
      { title: 'vs go-peer', get: r => fmt.ratio(r.vsGoPeer) },
      { title: 'per core vs go', get: r => fmt.ratio(r.perCoreVsGoPeer) })
    return { rows, columns, compareBy: 'closedReqPerSec', notes }
  }
}

/** Warms the fresh broker up (BENCH_KAFKA_WARMUP) and says how it went and where it runs. */
async function kafkaNotes (ctx, infra, k) {
  const notes = []
  if (k.kafkaWarmup > 0) {
    const w = await warmKafka({ brokers: infra.brokers, seconds: k.kafkaWarmup, cpu: ctx.serverCpu, bodyFile: join(REPO_DIR, FIXTURE), log: ctx.log })
    infra.warmup = w
    const tail = w.perSecond.slice(-6, -1)
    notes.push(`Kafka warmed up for ${k.kafkaWarmup} s before the first target (bench/baselines/kafka-warmup.mjs): sends/s went from ${w.perSecond[1] ?? '?'} in its 2nd second to ${tail.length ? Math.round(tail.reduce((a, b) => a + b, 0) / tail.length) : '?'} over its last seconds`)
  } else {
    notes.push('Kafka NOT warmed up (BENCH_KAFKA_WARMUP=0): the first Kafka target pays for the broker\'s JIT warm-up')
  }
  notes.push(`Kafka ${infra.env.INFRA_KAFKA_VERSION ?? ''} (KRaft, one broker+controller JVM, ${infra.brokers}) from scripts/infra.sh with its own run dir, ` +
    `${k.kafkaCpu === undefined ? 'not pinned' : `pinned to CPU${k.kafkaCpu}`} (with MinIO, idle); ` +
    'topics of 6 partitions, every record has the same key (asset_id) so all go to one partition')
  return notes
}

/** Ratios, bounds and status counts on the rows; the issue's targets as notes. */
function readRows (rows, ctx, k) {
  const { settings } = ctx
  const find = label => rows.find(r => r.label === label && r.closedReqPerSec !== undefined && !r.error)
  const bare = find('bare-uws-json')
  const fastify = find('fastify-kafkajs')
  const go = find('go-peer')
  for (const r of rows) {
    // The server's CPU time per request: what a shared machine moves least.
    if (r.serverCpu !== undefined && r.reqPerSec > 0) r.cpuUsPerReq = r.serverCpu / r.reqPerSec * 1e6
    if (r.reqPerSec > 0) r.recordsPerSec = r.reqPerSec * (r.records ?? 1)
    if (r.closedReqPerSec === undefined) continue
    if (bare) r.vsBareUws = r.closedReqPerSec / bare.closedReqPerSec
    if (fastify) r.vsFastify = r.closedReqPerSec / fastify.closedReqPerSec
    if (go) r.vsGoPeer = r.closedReqPerSec / go.closedReqPerSec
    if (go?.cpuUsPerReq && r.cpuUsPerReq) r.perCoreVsGoPeer = go.cpuUsPerReq / r.cpuUsPerReq
    r.bound = bound(r, ctx, settings.connections)
    if (r.bound) r.notes.push(r.bound)
  }
  for (const r of rows) if (r.accessLog?.requests) accessLogNote(r, settings)
  const notes = []
  const gk = find('gateway-kafka')
  const gkPaced = rows.find(r => r.paced && r.label.startsWith('gateway-kafka@'))
  const v = (ok, ...rs) => verdict(ok, rs, settings.busyThreshold)
  if (gk) {
    notes.push(`target ≥ ${TARGETS.kafkaReqPerSec} req/s on one core, Kafka acks=all: gateway-kafka ${Math.round(gk.reqPerSec)} req/s: ${v(gk.reqPerSec >= TARGETS.kafkaReqPerSec, gk)}`)
    if (bare) notes.push(`target ≥ ${TARGETS.vsBare * 100}% of bare-uws-json: gateway-kafka ${fmt.ratio(gk.vsBareUws)}: ${v(gk.vsBareUws >= TARGETS.vsBare, gk, bare)}`)
    if (fastify) notes.push(`target ≥ ${TARGETS.vsFastify}× fastify-kafkajs: gateway-kafka ${fmt.ratio(gk.vsFastify)}: ${v(gk.vsFastify >= TARGETS.vsFastify, gk, fastify)}`)
    if (go?.cpuUsPerReq && gk.cpuUsPerReq) {
      notes.push(`target: beat the Go peer per core (its CPU µs per request over ours ≥ ${TARGETS.vsGoPeerPerCore}): go-peer ${fmt.int(go.cpuUsPerReq)} µs/req, gateway-kafka ${fmt.int(gk.cpuUsPerReq)} µs/req, ${fmt.ratio(gk.perCoreVsGoPeer)}: ` +
        v(gk.perCoreVsGoPeer >= TARGETS.vsGoPeerPerCore, gk, go))
    }
  }
  const gb = find('gateway-kafka-batch')
  const gbPaced = rows.find(r => r.paced && r.label.startsWith('gateway-kafka-batch'))
  const goBatch = find('go-peer-batch')
  if (gb && goBatch?.cpuUsPerReq && gb.cpuUsPerReq) {
    notes.push(`batches per core against the Go peer: go-peer-batch ${fmt.int(goBatch.cpuUsPerReq / goBatch.records)} µs a record, gateway-kafka-batch ${fmt.int(gb.cpuUsPerReq / gb.records)} µs: ${fmt.ratio(goBatch.cpuUsPerReq / gb.cpuUsPerReq)}: ${v(goBatch.cpuUsPerReq >= gb.cpuUsPerReq, gb, goBatch)}`)
  }
  if (gb) {
    notes.push(`target ≥ ${TARGETS.batchRecordsPerSec} acknowledged records/s on one core, Kafka acks=all, gzip: gateway-kafka-batch ${Math.round(gb.recordsPerSec)} records/s in batches of ${gb.records} ` +
      `(${fmt.int(gb.cpuUsPerReq / gb.records)} µs of CPU a record; the one-record route here: ${gk ? `${Math.round(gk.reqPerSec)} records/s, ${fmt.int(gk.cpuUsPerReq)} µs` : 'not run'}): ${v(gb.recordsPerSec >= TARGETS.batchRecordsPerSec, gb)}`)
  }
  if (gbPaced && !gbPaced.error) {
    notes.push(`target p99 of an acknowledgment ≤ ${TARGETS.batchPacedP99Ms} ms at ${Math.round(k.pacedLoad * 100)}% of peak: gateway-kafka-batch p99 ${fmt.ms(gbPaced.latencyMs?.p99)} ms at ${gbPaced.paced.targetReqPerSec} batches/s: ` +
      v(gbPaced.latencyMs?.p99 !== undefined && gbPaced.latencyMs.p99 <= TARGETS.batchPacedP99Ms, gbPaced))
  }
  const gs = find('gateway-kafka-stream')
  const gsPaced = rows.find(r => r.paced && r.label.startsWith('gateway-kafka-stream@'))
  if (gs) {
    notes.push(`target ≥ ${TARGETS.batchRecordsPerSec} acknowledged records/s on one core, Kafka acks=all, gzip: gateway-kafka-stream ${Math.round(gs.recordsPerSec)} records/s, ${gs.records} a message ` +
      `(${fmt.int(gs.cpuUsPerReq / gs.records)} µs of CPU a record): ${v(gs.recordsPerSec >= TARGETS.batchRecordsPerSec, gs)}`)
  }
  if (gsPaced && !gsPaced.error) {
    notes.push(`target p99 of an acknowledgment ≤ ${TARGETS.batchPacedP99Ms} ms at ${Math.round(k.pacedLoad * 100)}% of peak: gateway-kafka-stream p99 ${fmt.ms(gsPaced.latencyMs?.p99)} ms at ${gsPaced.paced.targetReqPerSec} messages/s: ` +
      v(gsPaced.latencyMs?.p99 !== undefined && gsPaced.latencyMs.p99 <= TARGETS.batchPacedP99Ms, gsPaced))
  }
  if (gkPaced && !gkPaced.error) {
    const p99 = gkPaced.latencyMs?.p99
    notes.push(`target p99 ≤ ${TARGETS.pacedP99Ms} ms at ${Math.round(k.pacedLoad * 100)}% of peak: gateway-kafka p99 ${fmt.ms(p99)} ms at ${gkPaced.paced.targetReqPerSec} req/s: ` +
      v(p99 !== undefined && p99 <= TARGETS.pacedP99Ms, gkPaced))
  }
  return notes
}
