// One timed run of the evidence scenario: `c` uploads of the media file,
// straight to MinIO (the baseline) or through the gateway, with the
// uploader's memory and CPU, MinIO's CPU and the machine's sampled.
//
// `u` is the scenario's set-up: { ctx, k, s3, infra, infraEnv, media,
// warmupMedia, stamp, timeoutMs }.
import { join } from 'node:path'
import { runNode } from '../../lib/child.mjs'
import { BENCH_DIR } from '../../lib/paths.mjs'
import { sampleWhile, othersCpu, memory } from '../../lib/sampler.mjs'
import { awsEnv, bucketContents, checkStored, emptyBucket, QUIET_SDK } from '../../lib/s3.mjs'

const CLIENT_SCRIPT = join(BENCH_DIR, 'baselines', 'evidence-client.mjs')
const DIRECT_SCRIPT = join(BENCH_DIR, 'baselines', 'direct-lib-storage.mjs')

/**
 * Where the gateway's idle memory is, from its GET /metrics (V8's heap,
 * Buffers and ArrayBuffers outside it) and /proc (RSS): what grows between
 * runs tells a leak or a cache (the heap or external memory grows) from
 * fragmentation (only the RSS does). Bytes; undefined fields when unreadable.
 */
async function memoryBreakdown (server) {
  const out = { rss: memory(server.pid)?.rss }
  try {
    const text = await (await fetch(new URL('/metrics', server.url), { signal: AbortSignal.timeout(5000) })).text()
    const get = name => { const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text); return m ? Number(m[1]) : undefined }
    out.heapUsed = get('nodejs_heap_size_used_bytes')
    out.heapTotal = get('nodejs_heap_size_total_bytes')
    out.external = get('nodejs_external_memory_bytes')
  } catch {}
  return out
}

const runTag = (u, label, c, rep) => `${label} ×${c}${u.k.repeat > 1 ? ` (run ${rep}/${u.k.repeat})` : ''}`

/** `script` run to its end while `pid`, MinIO and the script itself are sampled; its figures in row shape. */
async function timed (u, { pid, label, script, cpu, env, config }) {
  const minio = u.infra.minioPid
  let childPid
  const { value: { out }, proc, system } = await sampleWhile(pid, [{ label: 'minio', pid: minio }], watch =>
    runNode({ label, script, cpu, env, config, timeoutMs: (u.k.timeoutS + 60) * 1000, onStart: p => { childPid = p; watch(p) } }))
  return {
    out,
    proc,
    // Includes the script's start and warm-up: its own figure over the uploads is in `out`.
    childCpuWithStart: proc.otherCpuFraction[childPid],
    row: { mbPerSec: out.mbPerSec, seconds: out.seconds, bytes: out.bytes, uploadSeconds: out.uploads.map(x => x.seconds), minioCpu: proc.otherCpuFraction[minio], system }
  }
}

/** The objects a row left in `bucket` checked against `c` uploads, then deleted. */
async function checkBucket (u, row, bucket, c, keep = () => true) {
  const all = await bucketContents(u.s3, bucket)
  const objects = all.objects.filter(keep)
  row.stored = { count: objects.length, bytes: objects.reduce((a, x) => a + x.size, 0), openUploads: all.openUploads }
  row.problems.push(...checkStored({ ...all, objects, count: objects.length }, c, u.k.bytes))
  await emptyBucket(u.s3, bucket)
}

/** One timed run of the direct baseline (bench/baselines/direct-lib-storage.mjs on the server CPU). */
export async function direct (u, cfg, c, rep) {
  const { ctx, k } = u
  const label = 'direct-lib-storage'
  const bucket = `bench-direct-${u.stamp}`
  const row = { label, concurrency: c, partSize: cfg.partSize, queueSize: cfg.queueSize, baseline: true, problems: [], notes: [] }
  ctx.log(`  ${runTag(u, label, c, rep)}: ${c} upload(s) of ${k.bytes} bytes straight to MinIO`)
  const aws = awsEnv(u.infraEnv)
  const t = await timed(u, {
    pid: process.pid, // only for the companions' CPU (and the child's, once spawned)
    label,
    script: DIRECT_SCRIPT,
    cpu: ctx.serverCpu,
    env: { ...aws, ...QUIET_SDK },
    config: { endpoint: u.infraEnv.S3_ENDPOINT, bucket, region: aws.AWS_REGION, file: u.media.file, size: k.bytes, concurrency: c, partSize: cfg.partSize, queueSize: cfg.queueSize, warmupFile: u.warmupMedia?.file, timeoutMs: u.timeoutMs, runId: `${c}-${rep}` }
  })
  const o = t.out
  Object.assign(row, t.row, {
    uploaderCpuWithStart: t.childCpuWithStart,
    peakRssBytes: o.peakRssBytes,
    rssAtStartBytes: o.rssAtStartBytes,
    peakRssSource: 'its own VmHWM, reset before the timed uploads',
    lag: o.lag,
    lagP99Seconds: o.lag?.p99,
    uploaderCpu: o.cpuSeconds / o.seconds // its own process.cpuUsage() over the timed uploads
  })
  const failed = o.uploads.filter(x => x.error)
  if (failed.length) row.problems.push(`${failed.length} of ${c} upload(s) failed: ${failed[0].error}`)
  await checkBucket(u, row, bucket, c, x => !x.key.endsWith('/warmup.mp4'))
  row.othersCpu = othersCpu(row.system, row.uploaderCpuWithStart, row.minioCpu)
  return row
}

/** The evidence client (bench/baselines/evidence-client.mjs) once against `server`, on the load CPU. */
export function evidenceClient (u, server, config, onStart) {
  return runNode({
    label: 'evidence-client',
    script: CLIENT_SCRIPT,
    cpu: u.ctx.wrkCpu,
    timeoutMs: (u.k.timeoutS + 60) * 1000,
    config: { url: server.url, token: server.token, timeoutMs: u.timeoutMs, ...config },
    onStart
  })
}

/**
 * One timed run through the gateway (already started, warmed up, token in
 * hand); with `tusPatchBytes`, each upload is resumable (tus) in PATCHes of
 * that many bytes, then committed.
 */
export async function viaGateway (u, server, cfg, c, label, rep, tusPatchBytes) {
  const { ctx, k } = u
  const row = { label, concurrency: c, partSize: cfg.partSize, queueSize: cfg.queueSize, bufferBytes: cfg.bufferBytes, nodeArgs: cfg.nodeArgs, problems: [], notes: [] }
  ctx.log(`  ${runTag(u, label, c, rep)}: ${c} upload(s) of ${k.bytes} bytes through the gateway`)
  row.memoryAtStart = await memoryBreakdown(server)
  row.rssAtStartBytes = row.memoryAtStart.rss
  const t = await timed(u, {
    pid: server.pid,
    label: 'evidence-client',
    script: CLIENT_SCRIPT,
    cpu: ctx.wrkCpu,
    config: { url: server.url, token: server.token, file: u.media.file, size: k.bytes, concurrency: c, timeoutMs: u.timeoutMs, runId: `${u.stamp}-${label}-${c}-${rep}`, metrics: true, tusPatchBytes }
  })
  const o = t.out
  Object.assign(row, t.row, {
    peakRssBytes: t.proc.peakRssBytes,
    peakRssSource: t.proc.peakRssSource,
    endRssBytes: t.proc.endRssBytes,
    serverCpu: t.proc.cpuFraction,
    clientCpuWithStart: t.childCpuWithStart,
    answers: o.uploads.map(x => ({ status: x.status, body: x.body, error: x.error })),
    requestOverheadBytes: o.requestOverheadBytes,
    clientMaxRssBytes: o.maxRssBytes,
    clientCpu: o.cpuSeconds / o.seconds, // its own process.cpuUsage() over the uploads
    lag: o.lag,
    lagP99Seconds: o.lag?.p99
  })
  if (o.lag?.missing) row.notes.push('GET /metrics has no nodejs_eventloop_lag_p99_seconds: no event-loop figure')
  const bad = o.uploads.filter(x => x.status !== 202 || x.error)
  if (bad.length) row.problems.push(`${bad.length} of ${c} upload(s) not answered 202: ` + bad.slice(0, 2).map(x => (x.error ? `error ${x.error}` : `HTTP ${x.status} ${x.body}`)).join('; '))
  const wrongAck = o.uploads.filter(x => x.status === 202 && (!/"status":"accepted"/.test(x.body ?? '') || !/"media_count":1\b/.test(x.body ?? '')))
  if (wrongAck.length) row.problems.push(`202 with an unexpected body: ${wrongAck[0].body}`)
  if (!server.alive()) row.problems.push(`gateway died during the run (code ${server.child.exitCode}, signal ${server.child.signalCode})`)
  else await checkBucket(u, row, server.env.S3_BUCKET, c)
  if (tusPatchBytes) row.notes.push(`tus: a creation, PATCHes of ${tusPatchBytes} bytes on one kept-alive connection, the event committed as JSON; the object is the upload's own (${'{tenant}'}/uploads/)`)
  row.othersCpu = othersCpu(row.system, row.serverCpu, row.clientCpuWithStart, row.minioCpu)
  return row
}
