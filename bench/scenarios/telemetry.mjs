// POST /v1/asset/track with the spec's full example record
// (test/fixtures/asset-track.json), on the gateway with Kafka (acks=all) and
// with the local bus, beside two baselines measured in the same run:
//
//   bare-uws-json    bench/baselines/bare-uws-json.mjs: the same uWS build,
//                    body read, JSON.parse, 200 with the same body; nothing else
//   fastify-kafkajs  bench/baselines/fastify-kafkajs.mjs: Fastify 5 + kafkajs
//                    doing the gateway's work (JWT, ajv with the gateway's
//                    schema, one acks=all send per request)
//   gateway-kafka    BUS=kafka against a private broker (scripts/infra.sh with
//                    its own run dir), then again at a fixed rate (70% of its
//                    peak) for the p99 at that load
//   gateway-local    BUS=local (LMDB log, commit per batch)
//
// Kafka runs pinned to the load generator's CPU (BENCH_KAFKA_CPU), so the
// server under test keeps its core to itself; see bench/README.md.
import { generateKeyPairSync, createSign, randomUUID } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { gateway, bareUws, fastifyKafkajs, REPO_DIR } from '../lib/targets.mjs'
import { startInfra, warmKafka } from '../lib/infra.mjs'
import { luaScript, pacedLua, parsePaced } from '../lib/wrk.mjs'
import { WRK_COLUMNS, fmt } from '../lib/report.mjs'
import { logSize, accessLogStats, formatStatuses } from '../lib/logs.mjs'
import { interrupted } from '../lib/procs.mjs'
import { AUDIENCE, CLIENT, login } from '../lib/login.mjs'

const FIXTURE = 'test/fixtures/asset-track.json'
const BODY = readFileSync(join(REPO_DIR, FIXTURE)) // sent as is, byte for byte
const PATH = '/v1/asset/track'
const ISSUER = 'http://127.0.0.1:8080/' // the gateway's AUTH_ISSUER default; the fastify baseline checks the same

// The issue's targets (for the bench, not the tests).
const TARGETS = { kafkaReqPerSec: 25000, vsBare: 0.5, vsFastify: 1.5, pacedP99Ms: 20 }

function numberEnv (name, def, ok) {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return def
  const n = Number(raw)
  if (!ok(n)) throw new Error(`${name}: bad value ${JSON.stringify(raw)}`)
  return n
}

function knobs (settings) {
  // Where Kafka (and the idle MinIO infra.sh starts with it) runs: by default the
  // load generator's CPU, so the server's core is its own. `all`: every CPU.
  const raw = (process.env.BENCH_KAFKA_CPU ?? '').trim()
  let kafkaCpu
  if (raw === 'all') kafkaCpu = `0-${availableParallelism() - 1}`
  else if (raw !== '') kafkaCpu = raw
  else kafkaCpu = settings.pin ? String(settings.wrkCpu) : undefined
  // Unpinned runner: children inherit no affinity, so "all" needs no taskset.
  if (!settings.pin && raw === 'all') kafkaCpu = undefined
  return {
    kafkaCpu,
    pacedLoad: numberEnv('BENCH_PACED_LOAD', 0.7, n => n > 0 && n <= 1),
    pacedConnections: numberEnv('BENCH_PACED_CONNECTIONS', 300, n => Number.isInteger(n) && n >= 1),
    // Seconds of load on the fresh broker before any target is measured (its JIT).
    kafkaWarmup: numberEnv('BENCH_KAFKA_WARMUP', 30, n => Number.isInteger(n) && n >= 0)
  }
}

/** An RS256 JWT like the gateway's (kid, iss, aud, sub, client_id, scope, tenant, iat, exp, jti), signed with node:crypto. */
function signToken (privateKey, kid) {
  const b64 = o => Buffer.from(JSON.stringify(o)).toString('base64url')
  const now = Math.floor(Date.now() / 1000)
  const input = `${b64({ alg: 'RS256', kid, typ: 'JWT' })}.${b64({
    client_id: CLIENT.client_id, scope: CLIENT.scopes.join(' '), tenant: CLIENT.client_id,
    iss: ISSUER, sub: CLIENT.client_id, aud: AUDIENCE, iat: now, exp: now + 86400, jti: randomUUID()
  })}`
  return `${input}.${createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')}`
}

function request (token) {
  return {
    method: 'POST',
    path: PATH,
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      'X-Request-Id': 'bench-telemetry',
      'X-Request-Timestamp': '1763799330'
    },
    body: BODY,
    expectStatus: s => s === 200
  }
}


const pct = v => (v === undefined || v === null || Number.isNaN(v) ? '?' : `${Math.round(v * 100)}%`)

/** A sentence on what limits a closed-loop row, from the CPU figures. */
function boundNote (r, ctx, connections) {
  if (r.serverCpu === undefined || !r.reqPerSec) return undefined
  const kafka = r.companionCpu?.kafka
  const loadCpu = ctx.wrkCpu === undefined ? undefined : r.system?.perCpuBusy?.[ctx.wrkCpu]
  const where = ctx.serverCpu === undefined
    ? `server ${pct(r.serverCpu)} of a core, wrk ${pct(r.wrkCpu)}${kafka === undefined ? '' : `, Kafka ${pct(kafka)}`} (not pinned)`
    : `server ${pct(r.serverCpu)} of CPU${ctx.serverCpu}; CPU${ctx.wrkCpu} ${pct(loadCpu)} busy (wrk ${pct(r.wrkCpu)}${kafka === undefined ? '' : `, Kafka ${pct(kafka)}`})`
  if (r.othersCpu > ctx.settings.busyThreshold) return `bound: unclear, other processes took ${pct(r.othersCpu)} of a core during the run (${where})`
  const loadBusy = loadCpu !== undefined && loadCpu >= 0.9
  if (r.serverCpu >= 0.9 && loadBusy) {
    return `bound: both cores are saturated (${where}): the server's figure is a lower bound` +
      (kafka !== undefined && kafka >= 0.2 ? ', the broker sharing the load core with wrk is a limit too' : '')
  }
  if (r.serverCpu >= 0.9) return `bound: CPU of the server (${where}); more req/s needs less work per request`
  if (loadBusy) {
    return `bound: the load side's core (${where}) is saturated, the server is not: this figure is a lower bound for the server` +
      (kafka !== undefined && kafka >= 0.2 ? ` (the broker shares that core with wrk: with Kafka on its own core it could be higher)` : '')
  }
  const inFlightMs = connections / r.reqPerSec * 1000
  const waitingFor = r.label.includes('kafka') ? ', largely waiting for the broker\'s acks=all acknowledgment' : r.label === 'gateway-local' ? ', largely waiting for the LMDB commit of its batch' : ''
  return `bound: waiting, not CPU (${where}): ${connections} requests in flight at ${Math.round(r.reqPerSec)} req/s means ${inFlightMs.toFixed(2)} ms each (Little's law)${waitingFor}; ` +
    'more connections (BENCH_CONNECTIONS) would show the CPU ceiling'
}

export default {
  name: 'telemetry',
  description: 'POST /v1/asset/track, full example record: gateway with Kafka acks=all and local bus beside bare uWS + JSON.parse and Fastify + kafkajs',
  baseline: 'bare-uws-json',
  headline (settings) {
    const k = knobs(settings)
    const kafka = settings.targets.length > 0 && !settings.targets.some(t => ['fastify-kafkajs', 'gateway-kafka'].includes(t))
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

    const KAFKA_TARGETS = ['fastify-kafkajs', 'gateway-kafka']
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
      if (infra) {
        if (k.kafkaWarmup > 0) {
          const w = await warmKafka({ brokers: infra.brokers, seconds: k.kafkaWarmup, cpu: ctx.serverCpu, bodyFile: join(REPO_DIR, FIXTURE), log })
          infra.warmup = w
          const tail = w.perSecond.slice(-6, -1)
          notes.push(`Kafka warmed up for ${k.kafkaWarmup} s before the first target (bench/baselines/kafka-warmup.mjs): sends/s went from ${w.perSecond[1] ?? '?'} in its 2nd second to ${tail.length ? Math.round(tail.reduce((a, b) => a + b, 0) / tail.length) : '?'} over its last seconds`)
        } else {
          notes.push('Kafka NOT warmed up (BENCH_KAFKA_WARMUP=0): the first Kafka target pays for the broker\'s JIT warm-up')
        }
        notes.push(`Kafka ${infra.env.INFRA_KAFKA_VERSION ?? ''} (KRaft, one broker+controller JVM, ${infra.brokers}) from scripts/infra.sh with its own run dir, ` +
          `${k.kafkaCpu === undefined ? 'not pinned' : `pinned to CPU${k.kafkaCpu}`} (with MinIO, idle); ` +
          'topics of 6 partitions, every record has the same key (asset_id) so all go to one partition')
      }
      const companions = infra ? [{ label: 'kafka', pid: infra.kafkaPid }, { label: 'minio', pid: infra.minioPid }] : []
      const kafkaEnv = infra ? { BUS: 'kafka', KAFKA_BROKERS: infra.brokers } : {}

      const targets = [
        { target: bareUws({ label: 'bare-uws-json', script: 'bare-uws-json.mjs' }), request: async () => request('unused') },
        {
          target: fastifyKafkajs({ env: { KAFKA_BROKERS: infra?.brokers ?? '', JWT_PUBLIC_KEY_FILE: publicKeyFile, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE } }),
          request: async () => request(fastifyToken),
          logStats: true
        },
        {
          target: gateway({ label: 'gateway-kafka', env: { ...kafkaEnv, AUTH_CLIENTS_FILE: clientsFile, AUTH_ISSUER: ISSUER } }),
          request: async server => request(await login(server)),
          logStats: true,
          paced: true
        },
        {
          target: gateway({ label: 'gateway-local', env: { BUS: 'local', AUTH_CLIENTS_FILE: clientsFile, AUTH_ISSUER: ISSUER } }),
          request: async server => request(await login(server)),
          logStats: true
        }
      ]

      for (const t of targets) {
        const label = t.target.label
        if (!want(label)) continue
        if (KAFKA_TARGETS.includes(label) && !infra) {
          rows.push({ label, error: infraError, problems: [infraError] })
          continue
        }
        log(`telemetry / ${label}`)
        let server
        try {
          server = await ctx.start(t.target)
          const req = await t.request(server)
          const at0 = logSize(server.logFile)
          const row = await ctx.measure(server, req, { companions })
          row.closedReqPerSec = row.reqPerSec
          row.baseline = t.target.kind === 'baseline' || undefined
          rows.push(row)
          let paced
          const at1 = logSize(server.logFile)
          if (t.paced && row.reqPerSec > 0) {
            const rate = Math.max(1, Math.round(row.reqPerSec * k.pacedLoad))
            const pacedReq = { ...req, lua: luaScript({ method: req.method, body: req.body }) + pacedLua({ ratePerThread: rate / settings.threads }) }
            log(`  ${label}: paced at ${rate} req/s (${Math.round(k.pacedLoad * 100)}% of ${Math.round(row.reqPerSec)}), ${k.pacedConnections} connections`)
            paced = await ctx.measure(server, pacedReq, { companions, wrk: { connections: Math.max(k.pacedConnections, settings.threads) } })
            paced.label = `${label}@${Math.round(k.pacedLoad * 100)}%`
            paced.paced = { targetReqPerSec: rate, load: k.pacedLoad, of: row.reqPerSec, connections: k.pacedConnections, ...parsePaced(paced.wrk?.output) }
            rows.push(paced)
          }
          const logFile = server.logFile
          await ctx.stop(server)
          server = undefined
          if (t.logStats) {
            // After the stop: the servers' logs are buffered and flushed on shutdown.
            row.accessLog = accessLogStats(logFile, at0, paced ? at1 : undefined)
            if (paced) paced.accessLog = accessLogStats(logFile, at1)
          }
        } catch (err) {
          ctx.warn(`${label}: ${err.message}`)
          rows.push({ label, error: err.message, problems: [err.message] })
        } finally {
          if (server) await ctx.stop(server).catch(err => ctx.warn(`${label}: stop failed: ${err.message}`))
        }
      }
    } finally {
      await infra?.stop()
    }

    // Ratios, bounds, status counts, targets.
    const find = label => rows.find(r => r.label === label && r.closedReqPerSec !== undefined && !r.error)
    const bare = find('bare-uws-json')
    const fastify = find('fastify-kafkajs')
    for (const r of rows) {
      if (r.closedReqPerSec === undefined) continue
      if (bare) r.vsBareUws = r.closedReqPerSec / bare.closedReqPerSec
      if (fastify) r.vsFastify = r.closedReqPerSec / fastify.closedReqPerSec
      const b = boundNote(r, ctx, settings.connections)
      if (b) { r.bound = b; r.notes.push(b) }
    }
    for (const r of rows) {
      const stats = r.accessLog
      if (!stats || stats.requests === 0) continue
      // wrk closes its connections with requests in flight when it stops: the
      // server logs those as 499 (client gone), at most one per connection per wrk run.
      const runs = settings.warmup > 0 ? 2 : 1
      const conns = r.paced ? r.paced.connections : settings.connections
      const gone = stats.statuses['499'] ?? 0
      const others = Object.entries(stats.statuses).filter(([s]) => s !== '200' && s !== '499')
      const what = r.paced ? 'paced run' : 'probe, warm-up and measured run'
      stats.expected499 = runs * conns
      if (others.length > 0 || gone > runs * conns || stats.problems.length > 0) {
        r.notes.push(`access log (${what}): ${formatStatuses(stats.statuses)}` +
          (stats.problems.length ? `; warn/error lines: ${stats.problems.slice(0, 5).map(p => `${p.count}× ${p.msg}`).join(' | ')}` : ''))
      }
    }
    for (const r of rows) {
      if (!r.paced) continue
      const p = r.paced
      r.notes.push(`fixed rate ${p.targetReqPerSec} req/s (${Math.round(p.load * 100)}% of ${Math.round(p.of)}) over ${p.connections} connections with wrk's delay() hook: ` +
        `${Math.round(r.reqPerSec)} req/s done, server ${pct(r.serverCpu)} of its core` +
        (p.sends === undefined ? '; no pacing report from wrk' : `; ${p.late} of ${p.sends} sends late by > ${p.lateMs} ms (max ${p.maxLagMs.toFixed(1)} ms)`))
      if (r.reqPerSec < 0.95 * p.targetReqPerSec) r.notes.push(`did not hold the rate (${Math.round(r.reqPerSec)} of ${p.targetReqPerSec} req/s): the server fell behind, its latencies are optimistic`)
      else if (p.sends !== undefined && p.late > 0.01 * p.sends) r.notes.push(`more than 1% of sends were late (no free connection): latencies leave that wait out; raise BENCH_PACED_CONNECTIONS`)
    }

    const gk = find('gateway-kafka')
    const gkPaced = rows.find(r => r.paced && r.label.startsWith('gateway-kafka'))
    const verdict = (ok, clean = true, ...rs) => {
      const noisy = rs.filter(r => r.othersCpu > settings.busyThreshold)
      return (ok ? (clean ? 'met' : 'met (but flagged)') : 'NOT met') +
        (noisy.length ? ` (machine not quiet during ${noisy.map(r => r.label).join(', ')}: figures low and noisy)` : '')
    }
    const clean = r => !r.error && !(r.problems?.length)
    if (gk) {
      notes.push(`target ≥ ${TARGETS.kafkaReqPerSec} req/s on one core, Kafka acks=all: gateway-kafka ${Math.round(gk.reqPerSec)} req/s: ${verdict(gk.reqPerSec >= TARGETS.kafkaReqPerSec, clean(gk), gk)}`)
      if (bare) notes.push(`target ≥ ${TARGETS.vsBare * 100}% of bare-uws-json: gateway-kafka ${fmt.ratio(gk.vsBareUws)}: ${verdict(gk.vsBareUws >= TARGETS.vsBare, clean(gk) && clean(bare), gk, bare)}`)
      if (fastify) notes.push(`target ≥ ${TARGETS.vsFastify}× fastify-kafkajs: gateway-kafka ${fmt.ratio(gk.vsFastify)}: ${verdict(gk.vsFastify >= TARGETS.vsFastify, clean(gk) && clean(fastify), gk, fastify)}`)
    }
    if (gkPaced && !gkPaced.error) {
      const p99 = gkPaced.latencyMs?.p99
      notes.push(`target p99 ≤ ${TARGETS.pacedP99Ms} ms at ${Math.round(k.pacedLoad * 100)}% of peak: gateway-kafka p99 ${fmt.ms(p99)} ms at ${gkPaced.paced.targetReqPerSec} req/s: ` +
        verdict(p99 !== undefined && p99 <= TARGETS.pacedP99Ms, clean(gkPaced), gkPaced))
    }

    const columns = [...WRK_COLUMNS]
    columns.splice(columns.findIndex(c => c.title === 'wrk CPU') + 1, 0, { title: 'kafka CPU', get: r => fmt.pct(r.companionCpu?.kafka) })
    columns.splice(columns.findIndex(c => c.title === 'vs baseline'), 1,
      { title: 'vs bare-uws', get: r => fmt.ratio(r.vsBareUws) },
      { title: 'vs fastify', get: r => fmt.ratio(r.vsFastify) })
    return { rows, columns, compareBy: 'closedReqPerSec', notes }
  }
}
