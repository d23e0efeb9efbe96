// Runs across nodes (docs/scaling.md): what a run costs the brokers and the
// object store, and how long a node takes to join against a run history.
//
//   per-run      runs started through node 1 of a cluster of two (BUS=kafka,
//                STORAGE=s3, harness only), echo with BENCH_RUNS_CLUSTER_STEPS
//                steps, BENCH_RUNS_CLUSTER_RUNS of them, 100 at a time: Kafka
//                requests per run (gateway_runs_kafka_requests_total, both
//                nodes, by API) and S3 requests per second, counted by a
//                proxy in front of MinIO and split by key prefix
//   join-<H>     a third node started against a history of H runs (each
//                BENCH_RUNS_CLUSTER_HISTORY entry): from its start to
//                serving all its partitions, and the offsets it read
//
// The baseline of each join row is the history the node did not read:
// offsets in the topic against offsets read.
import { readFileSync } from 'node:fs'
import { createServer, request } from 'node:http'
import { randomBytes } from 'node:crypto'
import { gateway } from '../lib/targets.mjs'
import { startInfra } from '../lib/infra.mjs'
import { awsEnv, QUIET_SDK } from '../lib/s3.mjs'
import { numberEnv } from '../lib/env.mjs'
import { fmt } from '../lib/format.mjs'

function knobs () {
  return {
    runs: numberEnv('BENCH_RUNS_CLUSTER_RUNS', 2000, n => Number.isInteger(n) && n >= 100),
    steps: numberEnv('BENCH_RUNS_CLUSTER_STEPS', 3, n => Number.isInteger(n) && n >= 0),
    history: (process.env.BENCH_RUNS_CLUSTER_HISTORY ?? '5000,20000').split(',').map(Number).filter(n => n > 0),
    partitions: numberEnv('BENCH_RUNS_CLUSTER_PARTITIONS', 12, n => Number.isInteger(n) && n >= 1)
  }
}

/** A proxy in front of the object store that counts requests by the first two segments of the key. */
function countingProxy (target) {
  const counts = new Map()
  const upstream = new URL(target)
  const server = createServer((req, res) => {
    const [, , ...key] = (req.url ?? '').split('?')[0].split('/')
    const what = key.length === 0 ? '(bucket)' : key.slice(0, 2).join('/')
    counts.set(what, (counts.get(what) ?? 0) + 1)
    const out = request({ hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, up => {
      res.writeHead(up.statusCode ?? 502, up.headers)
      up.pipe(res)
    })
    out.on('error', () => res.destroy())
    req.pipe(out)
  })
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${server.address().port}`, counts, close: () => server.close() })))
}

async function kafkaRequests (server) {
  const text = await (await fetch(`${server.url}/metrics`)).text()
  const byApi = {}
  for (const m of text.matchAll(/^gateway_runs_kafka_requests_total\{api="([^"]+)"\} (\d+)/gm)) byApi[m[1]] = Number(m[2])
  return byApi
}

async function serving (server) {
  const body = await (await fetch(`${server.url}/health/ready`)).json()
  return body.components?.runs
}

async function startRuns (server, count, steps) {
  const ids = []
  for (let i = 0; i < count; i += 100) {
    ids.push(...await Promise.all(Array.from({ length: Math.min(100, count - i) }, async () => {
      const res = await fetch(`${server.url}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'bench', mode: 'echo', options: { steps } }) })
      if (res.status !== 202) throw new Error(`runs:start answered ${res.status}`)
      return (await res.json()).run_id
    })))
  }
  return ids
}

async function until (check, timeoutMs, what) {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (await check().catch(() => false)) return
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

export default {
  name: 'runs-cluster',
  description: 'runs across nodes on Kafka: Kafka and S3 requests per run, a node joining against a run history (BUS=kafka, STORAGE=s3)',
  headline () {
    const k = knobs()
    return `${k.runs} echo runs of ${k.steps} steps on two nodes; a third joins against ${k.history.join(' and ')} runs; ${k.partitions} partitions`
  },

  async run (ctx) {
    const { log } = ctx
    const k = knobs()
    const rows = []
    const notes = []
    let infra
    let proxy
    const servers = []
    try {
      infra = await startInfra({ cpu: undefined, log })
      proxy = await countingProxy(infra.env.S3_ENDPOINT)
      const stamp = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`
      const env = {
        ROLES: 'harness',
        BUS: 'kafka',
        KAFKA_BROKERS: infra.brokers,
        KAFKA_TOPIC_PARTITIONS: String(k.partitions),
        STORAGE: 's3',
        S3_ENDPOINT: proxy.url,
        S3_FORCE_PATH_STYLE: 'true',
        S3_BUCKET: `bench-runs-${stamp}`,
        TOPIC_RUNS: `runs-${stamp}`,
        TOPIC_RUNS_CONTROL: `commands-${stamp}`,
        HARNESS_GROUP_ID: `runs-${stamp}`,
        HARNESS_PEER_PORT: '0',
        ...awsEnv(infra.env),
        ...QUIET_SDK
      }
      const node = label => gateway({ label, listenOn: 'harnessPort', pin: false, env })
      for (const label of ['node-1', 'node-2']) servers.push(await node(label).start(ctx))
      await until(async () => (await Promise.all(servers.map(serving))).every(s => s?.ready && s.starting.length === 0) &&
        (await Promise.all(servers.map(serving))).reduce((n, s) => n + s.serving.length, 0) === k.partitions, 60_000, 'two nodes serving every partition')

      log(`runs-cluster / per-run: ${k.runs} runs`)
      const before = await Promise.all(servers.map(kafkaRequests))
      proxy.counts.clear()
      const startedAt = performance.now()
      const ids = await startRuns(servers[0], k.runs, k.steps)
      await until(async () => (await (await fetch(`${servers[1].url}/runs/${ids.at(-1)}`)).json()).status === 'succeeded', 120_000, 'the last run ended')
      const seconds = (performance.now() - startedAt) / 1000
      const after = await Promise.all(servers.map(kafkaRequests))
      const byApi = {}
      after.forEach((a, i) => { for (const [api, n] of Object.entries(a)) byApi[api] = (byApi[api] ?? 0) + n - (before[i][api] ?? 0) })
      const kafkaTotal = Object.values(byApi).reduce((a, b) => a + b, 0)
      const s3 = [...proxy.counts].sort((a, b) => b[1] - a[1])
      const s3Total = s3.reduce((n, [, c]) => n + c, 0)
      rows.push({ label: 'per-run', runs: k.runs, seconds, kafkaPerRun: kafkaTotal / k.runs, s3PerSecond: s3Total / seconds, notes: [
        `Kafka requests by API over ${k.runs} runs: ${Object.entries(byApi).sort((a, b) => b[1] - a[1]).map(([api, n]) => `${api} ${(n / k.runs).toFixed(2)}/run`).join(', ')}`,
        `S3 requests in ${seconds.toFixed(1)} s, by key prefix: ${s3.map(([what, n]) => `${what} ${n}`).join(', ') || 'none'}`
      ] })

      let made = k.runs
      for (const history of k.history) {
        if (history > made) {
          log(`runs-cluster / history: ${history - made} more runs`)
          const more = await startRuns(servers[0], history - made, 0)
          await until(async () => (await (await fetch(`${servers[1].url}/runs/${more.at(-1)}`)).json()).status === 'succeeded', 300_000, 'the history ended')
          made = history
        }
        log(`runs-cluster / join-${history}`)
        const joinAt = performance.now()
        const third = await node(`node-join-${history}`).start(ctx)
        await until(async () => { const s = await serving(third); return s?.ready && s.starting.length === 0 && s.serving.length > 0 }, 300_000, 'the new node serving its partitions')
        const ms = performance.now() - joinAt
        const lines = readFileSync(third.logFile, 'utf8').split('\n').filter(l => l.includes('runs partition taken up')).map(l => JSON.parse(l))
        const read = lines.reduce((n, l) => n + l.to - l.restoredFrom, 0)
        rows.push({ label: `join-${history}`, runs: history, seconds: ms / 1000, partitions: lines.length, read, notes: [`partitions taken up: ${lines.map(l => `${l.partition} (${l.to - l.restoredFrom} offsets, ${l.ms} ms)`).join(', ')}`] })
        await third.stop()
        await until(async () => (await Promise.all(servers.map(serving))).reduce((n, s) => n + (s?.serving.length ?? 0), 0) === k.partitions, 60_000, 'the two nodes serving every partition again')
      }
    } finally {
      for (const s of servers) await s.stop().catch(() => undefined)
      proxy?.close()
      await infra?.stop()
    }
    const columns = [
      { title: 'row', get: r => r.label },
      { title: 'runs', get: r => fmt.int(r.runs) },
      { title: 'seconds', get: r => r.seconds === undefined ? '-' : r.seconds.toFixed(2) },
      { title: 'Kafka req/run', get: r => r.kafkaPerRun === undefined ? '-' : r.kafkaPerRun.toFixed(2) },
      { title: 'S3 req/s', get: r => r.s3PerSecond === undefined ? '-' : r.s3PerSecond.toFixed(2) },
      { title: 'partitions', get: r => fmt.int(r.partitions) },
      { title: 'offsets read', get: r => fmt.int(r.read) }
    ]
    notes.push('S3 requests are all of the node\'s (its shared keys and clients, its evidence-claim heartbeat): none is for a run')
    return { rows, columns, notes }
  }
}
