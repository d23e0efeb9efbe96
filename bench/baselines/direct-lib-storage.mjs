// Baseline of the `evidence` scenario: the same file(s) uploaded straight to
// the S3 API (the scenario's MinIO) with @aws-sdk/lib-storage's Upload, the
// way the gateway stores a media part (same part size, same queue size,
// leavePartsOnError false), `concurrency` uploads at once, from a process of
// its own. No HTTP in front, no multipart parsing, no hashing: what the
// object store and the SDK alone do on this machine.
//
// Usage: node direct-lib-storage.mjs '<json>' with
//   { endpoint, bucket, region, file, size, concurrency, partSize, queueSize,
//     warmupFile, timeoutMs, runId }
// Credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY. Creates the
// bucket when missing. `warmupFile`: uploaded once first, untimed (JIT, the
// client's connections), like the gateway's warm-up upload.
//
// Prints one JSON line on stdout: { seconds, bytes, mbPerSec, uploads:
// [{ seconds, etag, error }], cpuSeconds, peakRssBytes, rssAtStartBytes, lag }. peakRssBytes
// is this process's VmHWM over the timed uploads (reset just before them
// through /proc/self/clear_refs); `lag` its own event loop's delay over them
// (monitorEventLoopDelay, 10 ms resolution, as prom-client's in the gateway).
// @aws-sdk/* resolve from the repository's node_modules (the gateway's own).
import { createReadStream, writeFileSync } from 'node:fs'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { S3Client, HeadBucketCommand, CreateBucketCommand } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import { uploadConfig, secondsSince, timeUploads } from '../lib/upload-script.mjs'
import { memory } from '../lib/sampler.mjs'

const { cfg, size, timeoutMs, runId } = uploadConfig('direct-lib-storage', ['endpoint', 'bucket', 'file', 'concurrency', 'partSize', 'queueSize'])

const client = new S3Client({ region: cfg.region ?? 'us-east-1', forcePathStyle: true, endpoint: cfg.endpoint })
try {
  await client.send(new HeadBucketCommand({ Bucket: cfg.bucket }))
} catch (err) {
  if (err?.$metadata?.httpStatusCode !== 404) throw err
  await client.send(new CreateBucketCommand({ Bucket: cfg.bucket }))
}

/** One upload; resolves (never rejects) to { seconds, etag, error }. */
async function put (key, file, t0) {
  const upload = new Upload({
    client,
    params: { Bucket: cfg.bucket, Key: key, Body: createReadStream(file, { highWaterMark: 1024 * 1024 }), ContentType: 'video/mp4' },
    partSize: cfg.partSize,
    queueSize: cfg.queueSize,
    leavePartsOnError: false
  })
  const timer = setTimeout(() => { upload.abort().catch(() => {}) }, timeoutMs)
  try {
    const done = await upload.done()
    return { seconds: secondsSince(t0), etag: done.ETag }
  } catch (err) {
    return { seconds: secondsSince(t0), error: err.message }
  } finally {
    clearTimeout(timer)
  }
}

if (cfg.warmupFile) {
  const w = await put(`direct/${runId}/warmup.mp4`, cfg.warmupFile, process.hrtime.bigint())
  if (w.error) throw new Error(`warm-up upload failed: ${w.error}`)
}

let hwmReset = false
try { writeFileSync('/proc/self/clear_refs', '5'); hwmReset = true } catch {}
const rssAtStart = memory('self').rss
const lagHistogram = monitorEventLoopDelay({ resolution: 10 })
lagHistogram.enable()
const timing = await timeUploads(cfg.concurrency, size, (i, t0) => put(`direct/${runId}/${i}.mp4`, cfg.file, t0))
lagHistogram.disable()
process.stdout.write(JSON.stringify({
  ...timing,
  peakRssBytes: hwmReset ? memory('self').hwm : undefined,
  rssAtStartBytes: rssAtStart,
  lag: {
    min: lagHistogram.min / 1e9,
    max: lagHistogram.max / 1e9,
    mean: lagHistogram.mean / 1e9,
    p50: lagHistogram.percentile(50) / 1e9,
    p90: lagHistogram.percentile(90) / 1e9,
    p99: lagHistogram.percentile(99) / 1e9
  }
}) + '\n')
client.destroy()
