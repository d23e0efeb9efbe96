// Evidence uploads: 1 and 4 concurrent "256 MB" media uploads through the
// gateway (POST /v1/stream/events, multipart, STORAGE=s3) into a private
// MinIO, beside the same file(s) uploaded straight to that MinIO with
// @aws-sdk/lib-storage from a process of its own, in the same run:
//
//   direct-lib-storage  bench/baselines/direct-lib-storage.mjs: Upload with the
//                       gateway's part size and queue size, no HTTP in front,
//                       no multipart parsing, no hashing
//   gateway             node bin/gateway.js start, STORAGE=s3, BUS=local, fed by
//                       bench/baselines/evidence-client.mjs (one process, one
//                       connection per upload, body streamed from the file)
//   gateway-lean        the same with the memory profile of docs/evidence.md
//                       (node --max-semi-space-size=2, a 3-slab pool), ratios
//                       against the same direct rows: run when the default's
//                       4-upload peak RSS is over target
//                       (BENCH_EVIDENCE_VARIANT=auto), or always / never
//
// Figures per row: MB/s (media bytes / wall time from the first byte sent to
// the last answer), the ratio to the direct upload at the same concurrency
// and settings, the uploader's peak RSS over the uploads (gateway: VmHWM
// reset at the start plus 100 ms polls; direct: its own VmHWM, reset before
// its timed uploads), and the event loop's p99 delay over the uploads (gateway:
// prom-client's nodejs_eventloop_lag_p99_seconds from GET /metrics, scraped
// right before the first upload and right after the last answer; direct: its
// own monitorEventLoopDelay, the same 10 ms resolution).
//
// Pinning: the gateway (all its threads, the hash workers too) on the server
// CPU; the client and MinIO on the load CPU; the direct uploader takes the
// gateway's place on the server CPU (MinIO on the load CPU), so in both cases
// the uploader has a core of its own. See bench/README.md.
import { spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, renameSync, statSync, statfsSync, writeFileSync, writeSync } from 'node:fs'
import { randomFillSync, randomBytes } from 'node:crypto'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { S3Client, ListObjectsV2Command, DeleteObjectsCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3'
import { gateway, BENCH_DIR, REPO_DIR } from '../lib/targets.mjs'
import { startInfra } from '../lib/infra.mjs'
import { pinned, track, interrupted } from '../lib/procs.mjs'
import { sampleSystem, memory } from '../lib/sampler.mjs'
import { fmt } from '../lib/report.mjs'
import { accessLogStats, formatStatuses, logSize } from '../lib/logs.mjs'
import { CLIENT, login } from '../lib/login.mjs'

const MiB = 1024 * 1024
const BODY_LIMIT = 268435456 // EVIDENCE_MAX_BYTES default: the whole request, envelope and boundaries included
const CLIENT_SCRIPT = join(BENCH_DIR, 'baselines', 'evidence-client.mjs')
const DIRECT_SCRIPT = join(BENCH_DIR, 'baselines', 'direct-lib-storage.mjs')
// The memory profile for processes that take uploads (docs/evidence.md): a
// 2 MiB young generation instead of V8's default 16 MiB, a pool of 3 slabs.
const LEAN = { nodeArgs: ['--max-semi-space-size=2'], slabs: 3 }
// prom-client's monitorEventLoopDelay resolution: the histogram holds the time
// between its 10 ms timer ticks, so an idle loop reads ~10.1 ms.
const LAG_RESOLUTION_S = 0.010

// The issue's targets (for the bench, not the tests).
const TARGETS = { ratio: 0.8, rssBytes: 150e6, lagP99Ms: 20 }

function intEnv (name, def, min = 1) {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return def
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`)
  return Number(raw)
}

function knobs (settings) {
  const concurrency = (process.env.BENCH_EVIDENCE_CONCURRENCY ?? '1,4').split(',').map(s => s.trim()).filter(Boolean).map(Number)
  if (concurrency.length === 0 || concurrency.some(n => !Number.isInteger(n) || n < 1 || n > 64)) throw new Error('BENCH_EVIDENCE_CONCURRENCY must list integers 1..64, e.g. 1,4')
  const variant = (process.env.BENCH_EVIDENCE_VARIANT ?? 'auto').trim()
  if (!['auto', 'always', 'never'].includes(variant)) throw new Error('BENCH_EVIDENCE_VARIANT must be auto, always or never')
  const raw = (process.env.BENCH_MINIO_CPU ?? '').trim()
  let minioCpu
  if (raw === 'all') minioCpu = settings.pin ? `0-${availableParallelism() - 1}` : undefined
  else if (raw !== '') minioCpu = raw
  else minioCpu = settings.pin ? String(settings.wrkCpu) : undefined
  return {
    bytes: intEnv('BENCH_EVIDENCE_BYTES', 256_000_000),
    warmupBytes: intEnv('BENCH_EVIDENCE_WARMUP_BYTES', 16_000_000, 0),
    concurrency,
    timeoutS: intEnv('BENCH_EVIDENCE_TIMEOUT', 300),
    repeat: intEnv('BENCH_EVIDENCE_REPEAT', 3),
    dir: process.env.BENCH_EVIDENCE_DIR || '/tmp/evidence-bench',
    variant,
    minioCpu,
    // The gateway's own variables, when set in the shell, apply to both the gateway and the direct baseline.
    partSize: intEnv('S3_PART_SIZE', 8 * MiB, 5 * MiB),
    queueSize: intEnv('S3_QUEUE_SIZE', 4, 1),
    // Only reported: the gateway reads it itself (inherited from the shell).
    bufferBytes: intEnv('STORAGE_BUFFER_BYTES', 48 * MiB, 5 * MiB)
  }
}

/** A file of `bytes` random bytes in `dir`, made once and reused (random: nothing on the way can compress it). */
function testFile (dir, bytes, log) {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${bytes}.bin`)
  if (existsSync(file) && statSync(file).size === bytes) return { file, made: false }
  log(`  writing ${bytes} random bytes to ${file} (once; later runs reuse it)`)
  const tmp = `${file}.tmp-${process.pid}`
  const fd = openSync(tmp, 'w')
  try {
    const chunk = Buffer.allocUnsafe(4 * MiB)
    for (let left = bytes; left > 0;) {
      const n = Math.min(left, chunk.length)
      randomFillSync(chunk, 0, n)
      writeSync(fd, chunk, 0, n)
      left -= n
    }
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, file)
  return { file, made: true }
}

function freeBytes (dir) {
  try { const s = statfsSync(dir); return s.bavail * s.bsize } catch { return undefined }
}


/**
 * Runs a node script (pinned to `cpu`) that prints one JSON line, with a
 * watchdog; resolves to { out, pid, stderr }. `onStart(pid)` right after spawn.
 */
function runNode ({ label, script, config, cpu, env, timeoutMs, onStart }) {
  const [cmd, args] = pinned(cpu, process.execPath, [script, JSON.stringify(config)])
  return new Promise((resolve, reject) => {
    const child = track(spawn(cmd, args, { cwd: REPO_DIR, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }))
    let out = ''
    let err = ''
    child.stdout.setEncoding('utf8').on('data', d => { out += d })
    child.stderr.setEncoding('utf8').on('data', d => { err = (err + d).slice(-4000) })
    const watchdog = setTimeout(() => { err += `\nbench: ${label} overran ${timeoutMs} ms, killed`; child.kill('SIGKILL') }, timeoutMs)
    child.once('spawn', () => onStart?.(child.pid))
    child.once('error', e => { clearTimeout(watchdog); reject(new Error(`cannot run ${label}: ${e.message}`)) })
    child.once('close', (code, signal) => {
      clearTimeout(watchdog)
      const line = out.trim().split('\n').pop()
      let parsed
      try { parsed = JSON.parse(line) } catch {}
      if (code !== 0 || !parsed) return reject(new Error(`${label} exited with ${code ?? signal}: ${err.trim().slice(-1500) || out.trim().slice(-500)}`))
      resolve({ out: parsed, pid: child.pid, stderr: err.trim() || undefined })
    })
  })
}

/** What is in a bucket: { count, bytes, sizes, open multipart uploads }. */
async function bucketContents (s3, bucket) {
  const sizes = []
  let token
  do {
    const r = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }))
    for (const o of r.Contents ?? []) sizes.push({ key: o.Key, size: o.Size })
    token = r.IsTruncated ? r.NextContinuationToken : undefined
  } while (token)
  let openUploads
  try { openUploads = (await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads?.length ?? 0 } catch {}
  return { count: sizes.length, bytes: sizes.reduce((a, o) => a + o.size, 0), objects: sizes, openUploads }
}

async function emptyBucket (s3, bucket) {
  const { objects } = await bucketContents(s3, bucket)
  for (let i = 0; i < objects.length; i += 1000) {
    await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects.slice(i, i + 1000).map(o => ({ Key: o.key })), Quiet: true } }))
  }
}

/** Objects stored by a row: `count` objects of `bytes` each, no multipart upload left open. */
function checkStored (contents, count, bytes) {
  const problems = []
  const wrong = contents.objects.filter(o => o.size !== bytes)
  if (contents.count !== count) problems.push(`${contents.count} objects in the bucket after the uploads, expected ${count}`)
  if (wrong.length) problems.push(`${wrong.length} stored object(s) not ${bytes} bytes: ${wrong.slice(0, 3).map(o => `${o.key} ${o.size}`).join(', ')}`)
  if (contents.openUploads) problems.push(`${contents.openUploads} multipart upload(s) left open`)
  return problems
}

/** CPU used by anything but this run's processes (uploader or gateway, client, MinIO, the runner), in cores. */
function othersCpu (r) {
  if (!r.system) return undefined
  const ours = (r.baseline ? (r.uploaderCpuWithStart ?? 0) : (r.serverCpu ?? 0) + (r.clientCpuWithStart ?? 0)) + (r.minioCpu ?? 0) + (r.system.runnerCores ?? 0)
  return Math.max(0, r.system.busyCores - ours)
}

const median = xs => {
  const v = xs.filter(x => x !== undefined && x !== null && !Number.isNaN(x)).sort((a, b) => a - b)
  if (v.length === 0) return undefined
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2
}

/**
 * One row per target and concurrency from its repeated runs: the median MB/s
 * and event-loop p99, the highest peak RSS; CPU figures of the run closest to
 * the median; every run in `runs`; problems and notes of all, by run.
 */
function aggregate (runs) {
  const groups = new Map()
  for (const r of runs) {
    const key = `${r.label}|${r.concurrency}`
    if (!groups.has(key)) groups.set(key, [])
    groups.get(key).push(r)
  }
  const rows = []
  for (const group of groups.values()) {
    const ok = group.filter(r => !r.error)
    const tagged = (r, text) => (group.length > 1 ? `run ${r.rep}: ${text}` : text)
    const problems = [...new Set(group.flatMap(r => (r.problems ?? []).map(p => tagged(r, p))))]
    const notes = [...new Set(group.flatMap(r => (r.notes ?? []).map(n => tagged(r, n))))]
    if (ok.length === 0) {
      rows.push({ ...group[0], problems, notes, runs: group })
      continue
    }
    const mbPerSec = median(ok.map(r => r.mbPerSec))
    const closest = ok.reduce((a, b) => (Math.abs(b.mbPerSec - mbPerSec) < Math.abs(a.mbPerSec - mbPerSec) ? b : a))
    const peaks = ok.map(r => r.peakRssBytes).filter(x => x !== undefined)
    const lags = ok.map(r => r.lagP99Seconds)
    rows.push({
      ...closest,
      rep: undefined,
      mbPerSec,
      mbPerSecRange: [Math.min(...ok.map(r => r.mbPerSec)), Math.max(...ok.map(r => r.mbPerSec))],
      peakRssBytes: peaks.length ? Math.max(...peaks) : undefined,
      lagP99Seconds: median(lags),
      lagP99Range: lags.some(x => x === undefined) ? undefined : [Math.min(...lags), Math.max(...lags)],
      othersCpu: Math.max(...ok.map(r => r.othersCpu ?? 0)),
      failedRuns: group.length - ok.length,
      problems,
      notes,
      runs: group
    })
  }
  return rows
}

const pct = v => (v === undefined || v === null || Number.isNaN(v) ? '-' : `${Math.round(v * 100)}%`)
const mb = v => (v === undefined || v === null ? '-' : `${(v / 1e6).toFixed(0)} MB`)
const lagMs = r => (r.lagP99Seconds === undefined ? undefined : Math.max(0, r.lagP99Seconds - LAG_RESOLUTION_S) * 1000)

export default {
  name: 'evidence',
  description: 'POST /v1/stream/events, 1 and 4 concurrent 256 MB media uploads to MinIO through the gateway beside lib-storage straight to MinIO',
  baseline: 'direct-lib-storage',
  headline (settings) {
    const k = knobs(settings)
    const where = settings.pin ? `gateway / direct uploader CPU${settings.serverCpu}, client CPU${settings.wrkCpu}, MinIO ${k.minioCpu === undefined ? 'not pinned' : `CPU${k.minioCpu}`}` : 'not pinned'
    return `POST /v1/stream/events multipart, ${k.bytes.toLocaleString('en-US')}-byte media, ${k.concurrency.join(' and ')} at once, ` +
      `S3_PART_SIZE=${k.partSize} S3_QUEUE_SIZE=${k.queueSize}, ${k.repeat === 1 ? '1 run' : `median of ${k.repeat} runs`} per row (${where}); not wrk, so ignore the load settings that follow`
  },

  async run (ctx) {
    const { settings, log } = ctx
    const k = knobs(settings)
    const rows = []
    const notes = []
    const timeoutMs = k.timeoutS * 1000

    // Test files: made once, reused across runs.
    const overhead = 600 // boundaries + envelope + part headers, about 450 bytes; checked by the client's figure below
    if (k.bytes + overhead > BODY_LIMIT) {
      ctx.warn(`BENCH_EVIDENCE_BYTES=${k.bytes}: the request would exceed the gateway's ${BODY_LIMIT}-byte body limit (EVIDENCE_MAX_BYTES): expect 413`)
    }
    const maxC = Math.max(...k.concurrency)
    const need = k.bytes + k.warmupBytes
    const free = freeBytes(existsSync(k.dir) ? k.dir : '/tmp')
    const fileExists = existsSync(join(k.dir, `${k.bytes}.bin`))
    // The files (unless present), then MinIO's copies of one row (deleted after each row), plus 1 GB of room.
    const needFree = (fileExists ? 0 : need) + maxC * (k.bytes + k.warmupBytes) + 1e9
    if (free !== undefined && free < needFree) throw new Error(`not enough free disk for the test files and MinIO's objects: ${mb(free)} free under ${k.dir}, need about ${mb(needFree)}`)
    const big = testFile(k.dir, k.bytes, log)
    const small = k.warmupBytes > 0 ? testFile(k.dir, k.warmupBytes, log) : undefined
    notes.push(`media: ${big.file}, ${k.bytes.toLocaleString('en-US')} random bytes (decimal MB: a 256 MiB file would not fit the gateway's ${BODY_LIMIT}-byte limit on the whole request with the envelope), ` +
      `${big.made ? 'written by this run' : 'reused from an earlier run'}; every upload of a row sends the same file (page cache)` +
      (small ? `; warm-up: one ${k.warmupBytes.toLocaleString('en-US')}-byte upload before each target's rows, untimed` : ''))

    const clientsFile = join(ctx.tmpDir, 'clients.json')
    writeFileSync(clientsFile, JSON.stringify([CLIENT]))

    let infra
    let s3
    try {
      infra = await startInfra({ cpu: k.minioCpu, log })
      // infra.sh also starts Kafka; the gateway runs with BUS=local here, so
      // stop it (down-kafka keeps MinIO; `down` at the end is still right).
      const dk = spawnSync('bash', [join(REPO_DIR, 'scripts', 'infra.sh'), 'down-kafka'], {
        env: { ...process.env, GATEWAY_INFRA_RUN: infra.runDir }, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 45000
      })
      if (dk.status !== 0) ctx.warn(`infra.sh down-kafka exited with ${dk.status ?? dk.signal}: ${dk.stderr?.trim()}`)
      const s3env = infra.env
      notes.push(`MinIO ${s3env.INFRA_MINIO_VERSION ?? ''} (${s3env.S3_ENDPOINT}, single drive under ${infra.runDir}) from scripts/infra.sh with its own run dir, ` +
        `${k.minioCpu === undefined ? 'not pinned' : `pinned to CPU${k.minioCpu}`}; the Kafka infra.sh starts beside it was stopped (infra.sh down-kafka): unused`)
      const awsEnv = { AWS_ACCESS_KEY_ID: s3env.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: s3env.AWS_SECRET_ACCESS_KEY, AWS_REGION: s3env.AWS_REGION ?? 'us-east-1' }
      // The SDK warns once per process that its 2027 releases need Node 22: not
      // this run's concern, and the runner's environment must stay the shell's.
      const quiet = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'
      const had = process.env[quiet]
      process.env[quiet] = 'true'
      s3 = new S3Client({
        region: awsEnv.AWS_REGION,
        endpoint: s3env.S3_ENDPOINT,
        forcePathStyle: true,
        credentials: { accessKeyId: awsEnv.AWS_ACCESS_KEY_ID, secretAccessKey: awsEnv.AWS_SECRET_ACCESS_KEY }
      })
      if (had === undefined) delete process.env[quiet]
      else process.env[quiet] = had
      const companions = [{ label: 'minio', pid: infra.minioPid }]
      const stamp = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`

      const quietNote = row => { row.othersCpu = othersCpu(row) }

      /** One timed row of the direct baseline. */
      const direct = async (cfg, c, label, rep) => {
        const bucket = `bench-direct-${stamp}`
        const row = { label, concurrency: c, partSize: cfg.partSize, queueSize: cfg.queueSize, baseline: true, problems: [], notes: [] }
        log(`  ${label} ×${c}${k.repeat > 1 ? ` (run ${rep}/${k.repeat})` : ''}: ${c} upload(s) of ${k.bytes} bytes straight to MinIO`)
        const system = sampleSystem()
        const sampler = ctx.sample(process.pid) // only for the companions' CPU (and the child's, once spawned)
        for (const p of companions) sampler.watch(p.pid)
        let childPid
        let r
        try {
          r = await runNode({
            label: 'direct-lib-storage',
            script: DIRECT_SCRIPT,
            cpu: ctx.serverCpu,
            env: { ...awsEnv, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
            timeoutMs: (k.timeoutS + 60) * 1000,
            onStart: pid => { childPid = pid; sampler.watch(pid) },
            config: { endpoint: s3env.S3_ENDPOINT, bucket, region: awsEnv.AWS_REGION, file: big.file, size: k.bytes, concurrency: c, partSize: cfg.partSize, queueSize: cfg.queueSize, warmupFile: small?.file, timeoutMs, runId: `${c}-${rep}` }
          })
        } finally {
          const s = sampler.stop()
          row.uploaderCpuWithStart = s.otherCpuFraction[childPid] // includes its start and warm-up
          row.minioCpu = s.otherCpuFraction[infra.minioPid]
          row.system = system.stop()
        }
        const o = r.out
        Object.assign(row, {
          mbPerSec: o.mbPerSec,
          seconds: o.seconds,
          bytes: o.bytes,
          uploadSeconds: o.uploads.map(u => u.seconds),
          peakRssBytes: o.peakRssBytes,
          rssAtStartBytes: o.rssAtStartBytes,
          peakRssSource: 'its own VmHWM, reset before the timed uploads',
          lag: o.lag,
          lagP99Seconds: o.lag?.p99,
          uploaderCpu: o.cpuSeconds / o.seconds // its own process.cpuUsage() over the timed uploads
        })
        const failed = o.uploads.filter(u => u.error)
        if (failed.length) row.problems.push(`${failed.length} of ${c} upload(s) failed: ${failed[0].error}`)
        const all = await bucketContents(s3, bucket)
        const objects = all.objects.filter(x => !x.key.endsWith('/warmup.mp4'))
        const contents = { ...all, objects, count: objects.length, bytes: objects.reduce((a, x) => a + x.size, 0) }
        row.stored = { count: contents.count, bytes: contents.bytes, openUploads: contents.openUploads }
        row.problems.push(...checkStored(contents, c, k.bytes))
        await emptyBucket(s3, bucket)
        quietNote(row)
        return row
      }

      /** One timed row through the gateway (already started, warmed up, token in hand). */
      const viaGateway = async (server, token, cfg, c, label, rep) => {
        const row = { label, concurrency: c, partSize: cfg.partSize, queueSize: cfg.queueSize, bufferBytes: cfg.bufferBytes, nodeArgs: cfg.nodeArgs, problems: [], notes: [] }
        log(`  ${label} ×${c}${k.repeat > 1 ? ` (run ${rep}/${k.repeat})` : ''}: ${c} upload(s) of ${k.bytes} bytes through the gateway`)
        row.rssAtStartBytes = memory(server.pid)?.rss
        const mem0 = ctx.sample(server.pid)
        const system = sampleSystem()
        for (const p of companions) mem0.watch(p.pid)
        let clientPid
        let r
        try {
          r = await runNode({
            label: 'evidence-client',
            script: CLIENT_SCRIPT,
            cpu: ctx.wrkCpu,
            timeoutMs: (k.timeoutS + 60) * 1000,
            onStart: pid => { clientPid = pid; mem0.watch(pid) },
            config: { url: server.url, token, file: big.file, size: k.bytes, concurrency: c, timeoutMs, runId: `${stamp}-${label}-${c}-${rep}`, metrics: true }
          })
        } finally {
          const s = mem0.stop()
          Object.assign(row, {
            peakRssBytes: s.peakRssBytes,
            peakRssSource: s.peakRssSource,
            endRssBytes: s.endRssBytes,
            serverCpu: s.cpuFraction,
            clientCpuWithStart: s.otherCpuFraction[clientPid],
            minioCpu: s.otherCpuFraction[infra.minioPid],
            system: system.stop()
          })
        }
        const o = r.out
        Object.assign(row, {
          mbPerSec: o.mbPerSec,
          seconds: o.seconds,
          bytes: o.bytes,
          uploadSeconds: o.uploads.map(u => u.seconds),
          answers: o.uploads.map(u => ({ status: u.status, body: u.body, error: u.error })),
          requestOverheadBytes: o.requestOverheadBytes,
          clientMaxRssBytes: o.maxRssBytes,
          clientCpu: o.cpuSeconds / o.seconds, // its own process.cpuUsage() over the uploads
          lag: o.lag,
          lagP99Seconds: o.lag?.p99
        })
        if (o.lag?.missing) row.notes.push('GET /metrics has no nodejs_eventloop_lag_p99_seconds: no event-loop figure')
        const bad = o.uploads.filter(u => u.status !== 202 || u.error)
        if (bad.length) {
          row.problems.push(`${bad.length} of ${c} upload(s) not answered 202: ` +
            bad.slice(0, 2).map(u => (u.error ? `error ${u.error}` : `HTTP ${u.status} ${u.body}`)).join('; '))
        }
        const wrongAck = o.uploads.filter(u => u.status === 202 && (!/"status":"accepted"/.test(u.body ?? '') || !/"media_count":1\b/.test(u.body ?? '')))
        if (wrongAck.length) row.problems.push(`202 with an unexpected body: ${wrongAck[0].body}`)
        const alive = server.child.exitCode === null && server.child.signalCode === null
        if (!alive) row.problems.push(`gateway died during the run (code ${server.child.exitCode}, signal ${server.child.signalCode})`)
        else {
          const contents = await bucketContents(s3, server.env.S3_BUCKET)
          row.stored = { count: contents.count, bytes: contents.bytes, openUploads: contents.openUploads }
          row.problems.push(...checkStored(contents, c, k.bytes))
          await emptyBucket(s3, server.env.S3_BUCKET)
        }
        quietNote(row)
        return row
      }

      /** Direct and gateway rows of one part/queue setting, concurrency by concurrency. */
      const runConfig = async (cfg, gwLabel) => {
        const out = [] // one entry per run; aggregated into rows at the end
        const bucket = `bench-evidence-${stamp}-${gwLabel}`
        const target = gateway({
          label: gwLabel,
          nodeArgs: cfg.nodeArgs,
          env: {
            STORAGE: 's3',
            BUS: 'local',
            S3_ENDPOINT: s3env.S3_ENDPOINT,
            S3_FORCE_PATH_STYLE: 'true',
            S3_BUCKET: bucket,
            S3_REGION: awsEnv.AWS_REGION,
            S3_PART_SIZE: String(cfg.partSize),
            S3_QUEUE_SIZE: String(cfg.queueSize),
            STORAGE_BUFFER_BYTES: String(cfg.bufferBytes),
            AUTH_CLIENTS_FILE: clientsFile,
            ...awsEnv,
            // Only silences the SDK's "Node 22 from 2027" warning in the gateway's stderr tail.
            AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true'
          }
        })
        let server
        try {
          for (const c of k.concurrency) for (let rep = 1; rep <= k.repeat; rep++) {
            if (interrupted()) throw new Error('interrupted')
            if (cfg.direct) {
              try {
                out.push({ ...await direct(cfg, c, 'direct-lib-storage', rep), rep })
              } catch (err) {
                ctx.warn(`direct-lib-storage ×${c}: ${err.message}`)
                out.push({ label: 'direct-lib-storage', concurrency: c, rep, partSize: cfg.partSize, queueSize: cfg.queueSize, baseline: true, error: err.message, problems: [err.message] })
                await emptyBucket(s3, `bench-direct-${stamp}`).catch(() => {})
              }
            }
            try {
              if (!server) {
                server = await ctx.start(target)
                server.token = await login(server)
                server.logStart = logSize(server.logFile)
                if (small) {
                  log(`  ${gwLabel}: warm-up upload (${k.warmupBytes} bytes)`)
                  const w = await runNode({
                    label: 'evidence-client (warm-up)', script: CLIENT_SCRIPT, cpu: ctx.wrkCpu, timeoutMs: (k.timeoutS + 60) * 1000,
                    config: { url: server.url, token: server.token, file: small.file, size: k.warmupBytes, concurrency: 1, timeoutMs, runId: `${stamp}-${gwLabel}-warmup` }
                  })
                  const u = w.out.uploads[0]
                  if (u.status !== 202) throw new Error(`warm-up upload answered ${u.status ?? u.error}: ${u.body ?? ''}`)
                  await emptyBucket(s3, bucket)
                }
              }
              out.push({ ...await viaGateway(server, server.token, cfg, c, gwLabel, rep), rep })
            } catch (err) {
              ctx.warn(`${gwLabel} ×${c}: ${err.message}`)
              out.push({ label: gwLabel, concurrency: c, rep, partSize: cfg.partSize, queueSize: cfg.queueSize, error: err.message, problems: [err.message] })
              if (server && (server.child.exitCode !== null || server.child.signalCode !== null)) {
                await ctx.stop(server).catch(() => {})
                server = undefined
              }
            }
          }
        } finally {
          if (server) {
            const logFile = server.logFile
            const from = server.logStart ?? 0
            await ctx.stop(server).catch(err => ctx.warn(`${gwLabel}: stop failed: ${err.message}`))
            // After the stop: pino's log is flushed on shutdown.
            const stats = accessLogStats(logFile, from)
            const gwRows = out.filter(r => r.label === gwLabel && !r.error)
            const expected = gwRows.reduce((a, r) => a + r.concurrency, 0) + (small ? 1 : 0)
            const logNote = { statuses: stats.statuses, expected202: expected, problems: stats.problems }
            const others = Object.entries(stats.statuses).filter(([s]) => s !== '202' && s !== '200')
            for (const r of gwRows) r.accessLog = logNote
            if (others.length || stats.problems.length || (stats.statuses['202'] ?? 0) !== expected) {
              const msg = `access log (warm-up and measured uploads): ${formatStatuses(stats.statuses) || 'no request lines'} (expected 202×${expected})` +
                (stats.problems.length ? `; warn/error lines: ${stats.problems.slice(0, 5).map(p => `${p.count}× ${p.msg}`).join(' | ')}` : '')
              for (const r of gwRows) r.notes.push(msg)
              if (others.length) for (const r of gwRows) r.problems.push(`non-202 answers in the access log: ${formatStatuses(Object.fromEntries(others))}`)
            }
          }
        }
        return aggregate(out)
      }

      const main = { partSize: k.partSize, queueSize: k.queueSize, bufferBytes: k.bufferBytes, nodeArgs: [], direct: true }
      rows.push(...await runConfig(main, 'gateway'))
      const gw4 = rows.find(r => r.label === 'gateway' && r.concurrency === maxC && !r.error)
      const lean = { ...main, bufferBytes: LEAN.slabs * main.partSize, nodeArgs: LEAN.nodeArgs, direct: false }
      const leanWhat = `${lean.nodeArgs.join(' ')}, STORAGE_BUFFER_BYTES=${lean.bufferBytes}`
      if (k.variant === 'always' || (k.variant === 'auto' && gw4 && gw4.peakRssBytes > TARGETS.rssBytes)) {
        log(`evidence / gateway-lean: ${leanWhat}` +
          (k.variant === 'auto' ? ` (the default's ×${maxC} peak RSS ${fmt.mib(gw4.peakRssBytes)} is over the target)` : ''))
        rows.push(...await runConfig(lean, 'gateway-lean'))
      } else if (k.variant === 'auto' && gw4) {
        notes.push(`gateway-lean (${leanWhat}) not run: the default's ×${maxC} peak RSS is within the target (BENCH_EVIDENCE_VARIANT=always runs it anyway)`)
      }
    } finally {
      s3?.destroy()
      await infra?.stop()
    }

    // Ratios to the direct upload at the same concurrency and settings, bounds, targets.
    const same = (a, b) => a.concurrency === b.concurrency && a.partSize === b.partSize && a.queueSize === b.queueSize
    for (const r of rows) {
      if (r.baseline || r.error || !r.mbPerSec) continue
      const d = rows.find(b => b.baseline && !b.error && b.mbPerSec && same(b, r))
      if (d) r.vsDirect = r.mbPerSec / d.mbPerSec
      const load = ctx.wrkCpu === undefined ? undefined : r.system?.perCpuBusy?.[ctx.wrkCpu]
      const where = `gateway ${pct(r.serverCpu)} of CPU${ctx.serverCpu ?? '?'}, CPU${ctx.wrkCpu ?? '?'} ${pct(load)} busy (client ${pct(r.clientCpu)}, MinIO ${pct(r.minioCpu)})`
      if (r.serverCpu >= 0.9 && load >= 0.9) r.bound = `both cores saturated (${where})`
      else if (r.serverCpu >= 0.9) r.bound = `the gateway's CPU (${where})`
      else if (load >= 0.9) r.bound = `the load core, client and MinIO together (${where}): the gateway's figure is a lower bound`
      else r.bound = `neither core saturated (${where}): the pipeline waits (MinIO's writes, parts in flight, TCP flow control)`
      r.notes.push(`bound: ${r.bound}`)
    }
    for (const r of rows) {
      if (!r.baseline || r.error) continue
      const load = ctx.wrkCpu === undefined ? undefined : r.system?.perCpuBusy?.[ctx.wrkCpu]
      r.notes.push(`uploader ${pct(r.uploaderCpu)} of CPU${ctx.serverCpu ?? '?'} over its timed uploads, CPU${ctx.wrkCpu ?? '?'} ${pct(load)} busy (MinIO ${pct(r.minioCpu)})`)
    }
    for (const r of rows) {
      const busy = (r.runs ?? [r]).filter(x => x.othersCpu > settings.busyThreshold)
      if (busy.length) {
        r.notes.push(`other processes used ${busy.map(x => pct(x.othersCpu)).join(', ')} of a core during ${busy.length} of ${(r.runs ?? [r]).length} run(s): ` +
          'the machine was not quiet, figures are low and noisy; run again when it is idle')
      }
    }
    const clean = r => !r.error && !(r.problems?.length)
    for (const r of rows.filter(r => !r.baseline && !r.error)) {
      const tag = `${r.label} ×${r.concurrency} (${r.partSize / MiB} MiB parts, queue ${r.queueSize})`
      const flag = clean(r) ? '' : ' (row flagged)'
      const d = rows.find(b => b.baseline && !b.error && same(b, r))
      const n = r.runs?.filter(x => !x.error).length ?? 1
      const range = (v, f) => (n > 1 && v ? `, runs ${f(v[0])}–${f(v[1])}` : '')
      const of = n > 1 ? `median of ${n} runs` : '1 run'
      if (r.vsDirect !== undefined) {
        notes.push(`target throughput ≥ ${TARGETS.ratio}× direct: ${tag} ${r.mbPerSec.toFixed(0)} MB/s (${of}${range(r.mbPerSecRange, x => x.toFixed(0))}) ` +
          `vs ${d.mbPerSec.toFixed(0)} MB/s (${range(d.mbPerSecRange, x => x.toFixed(0)).slice(2) || '1 run'}) = ${fmt.ratio(r.vsDirect)}: ${r.vsDirect >= TARGETS.ratio ? 'met' : 'NOT met'}${flag}`)
      }
      if (r.concurrency === maxC) {
        const perRun = (r.runs ?? [r]).filter(x => !x.error).map(x => `${Math.round((x.rssAtStartBytes ?? 0) / MiB)}→${Math.round(x.peakRssBytes / MiB)}`).join(', ')
        notes.push(`target peak RSS ≤ 150 MB (${fmt.mib(TARGETS.rssBytes)}) with ${maxC} concurrent uploads: ${tag} ${mb(r.peakRssBytes)} (${fmt.mib(r.peakRssBytes)}, highest of ${n} run${n > 1 ? 's' : ''}; ` +
          `RSS at start → peak per run: ${perRun} MiB): ${r.peakRssBytes <= TARGETS.rssBytes ? 'met' : 'NOT met'}${flag}` +
          ` [the gateway's slab pool: ${Math.floor(r.bufferBytes / r.partSize)} × ${r.partSize / MiB} MiB (STORAGE_BUFFER_BYTES ${r.bufferBytes})${r.nodeArgs?.length ? `, node ${r.nodeArgs.join(' ')}` : ''};` +
          ` lib-storage's part buffers in the direct process: ${maxC} × ${r.partSize / MiB} MiB × (queue ${r.queueSize} + 1) = ${maxC * r.partSize * (r.queueSize + 1) / MiB} MiB, which peaked at ${fmt.mib(d?.peakRssBytes)}]`)
      }
      const l = lagMs(r)
      if (l !== undefined) {
        notes.push(`target event-loop p99 ≤ ${TARGETS.lagP99Ms} ms while hashing: ${tag} ${l.toFixed(1)} ms (${of}${range(r.lagP99Range, x => `${(Math.max(0, x - LAG_RESOLUTION_S) * 1000).toFixed(0)}`)} ms; ` +
          `nodejs_eventloop_lag_p99_seconds ${(r.lagP99Seconds * 1000).toFixed(1)} ms minus its 10 ms tick): ${l <= TARGETS.lagP99Ms ? 'met' : 'NOT met'}${flag}` +
          (d && lagMs(d) !== undefined ? ` [direct-lib-storage's own loop, no hashing: ${lagMs(d).toFixed(1)} ms]` : ''))
      }
    }
    notes.push('event-loop p99: prom-client\'s monitorEventLoopDelay histogram (10 ms resolution) reports the time between its 10 ms ticks, so an idle loop reads ~10.1 ms; ' +
      'the column shows that minus 10 ms, i.e. how late the loop ran its timers; sampled once per tick, it is reset by each /metrics scrape (the first tick after it is not recorded), ' +
      'so blocks shorter than a tick count as at most their length and the figure covers the upload window only; raw figures in the JSON (lag)')

    const columns = [
      { title: 'target', get: r => r.label, align: 'left' },
      { title: 'part/queue', get: r => (r.partSize ? `${r.partSize / MiB} MiB/${r.queueSize}` : '-') },
      { title: 'concurrency', get: r => String(r.concurrency ?? '-') },
      { title: 'MB/s', get: r => (r.mbPerSec === undefined ? '-' : r.mbPerSec.toFixed(1)) },
      { title: 'ratio', get: r => (r.baseline ? (r.error ? '-' : '1.00×') : fmt.ratio(r.vsDirect)) },
      { title: 'peak RSS', get: r => fmt.mib(r.peakRssBytes) },
      { title: 'event-loop p99', get: r => { const l = lagMs(r); return l === undefined ? '-' : `${l.toFixed(1)} ms` } },
      { title: 'uploader CPU', get: r => pct(r.baseline ? r.uploaderCpu : r.serverCpu) },
      { title: 'client CPU', get: r => pct(r.clientCpu) },
      { title: 'MinIO CPU', get: r => pct(r.minioCpu) },
      { title: 'other CPU', get: r => pct(r.othersCpu) },
      { title: 'status', get: r => (r.error ? 'FAILED' : r.problems?.length ? 'FLAGGED' : 'ok'), align: 'left' }
    ]
    return { rows, columns, compareBy: 'vsDirect', notes }
  }
}
