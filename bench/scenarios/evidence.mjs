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
//   gateway-tus         the same gateway, each clip sent resumably (tus) in
//                       PATCHes of BENCH_EVIDENCE_TUS_PATCH_BYTES (8 MiB), then
//                       committed by reference (bench/baselines/evidence-client.mjs)
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
// the uploader has a core of its own. See bench/README.md. The pieces are in
// evidence/: knobs, one timed run, the rows of one setting, reading them.
import { existsSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { startInfra } from '../lib/infra.mjs'
import { testFile, freeBytes } from '../lib/media.mjs'
import { s3Client } from '../lib/s3.mjs'
import { fmt } from '../lib/format.mjs'
import { CLIENT } from '../lib/login.mjs'
import { knobs, BODY_LIMIT, TARGETS } from './evidence/knobs.mjs'
import { runConfig } from './evidence/config.mjs'
import { readRows, figures, COLUMNS } from './evidence/rows.mjs'

/** The media file (and the warm-up one), made once, after a check that they and MinIO's copies fit on disk. */
function mediaFiles (ctx, k, notes) {
  const overhead = 600 // boundaries + envelope + part headers, about 450 bytes; checked by the client's figure
  if (k.bytes + overhead > BODY_LIMIT) {
    ctx.warn(`BENCH_EVIDENCE_BYTES=${k.bytes}: the request would exceed the gateway's ${BODY_LIMIT}-byte body limit (EVIDENCE_MAX_BYTES): expect 413`)
  }
  const maxC = Math.max(...k.concurrency)
  const free = freeBytes(existsSync(k.dir) ? k.dir : '/tmp')
  const fileExists = existsSync(join(k.dir, `${k.bytes}.bin`))
  // The files (unless present), then MinIO's copies of one row (deleted after each row), plus 1 GB of room.
  const needFree = (fileExists ? 0 : k.bytes + k.warmupBytes) + maxC * (k.bytes + k.warmupBytes) + 1e9
  if (free !== undefined && free < needFree) throw new Error(`not enough free disk for the test files and MinIO's objects: ${fmt.mb(free)} free under ${k.dir}, need about ${fmt.mb(needFree)}`)
  const media = testFile(k.dir, k.bytes, ctx.log)
  const warmupMedia = k.warmupBytes > 0 ? testFile(k.dir, k.warmupBytes, ctx.log) : undefined
  notes.push(`media: ${media.file}, ${k.bytes.toLocaleString('en-US')} random bytes (decimal MB: a 256 MiB file would not fit the gateway's ${BODY_LIMIT}-byte limit on the whole request with the envelope), ` +
    `${media.made ? 'written by this run' : 'reused from an earlier run'}; every upload of a row sends the same file (page cache)` +
    (warmupMedia ? `; warm-up: one ${k.warmupBytes.toLocaleString('en-US')}-byte upload before each target's rows, untimed` : ''))
  return { media, warmupMedia }
}

export default {
  name: 'evidence',
  description: 'POST /v1/stream/events, 1 and 4 concurrent 256 MB media uploads to MinIO through the gateway beside lib-storage straight to MinIO',
  baseline: 'direct-lib-storage',
  figures,
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
    const maxC = Math.max(...k.concurrency)
    const { media, warmupMedia } = mediaFiles(ctx, k, notes)
    const clientsFile = join(ctx.tmpDir, 'clients.json')
    writeFileSync(clientsFile, JSON.stringify([CLIENT]))

    let infra
    let s3
    try {
      infra = await startInfra({ cpu: k.minioCpu, log })
      // The gateway runs with BUS=local: the Kafka infra.sh starts beside MinIO is not needed.
      const kafkaLeft = infra.stopKafka()
      if (kafkaLeft) ctx.warn(kafkaLeft)
      notes.push(`MinIO ${infra.env.INFRA_MINIO_VERSION ?? ''} (${infra.env.S3_ENDPOINT}, single drive under ${infra.runDir}) from scripts/infra.sh with its own run dir, ` +
        `${k.minioCpu === undefined ? 'not pinned' : `pinned to CPU${k.minioCpu}`}; the Kafka infra.sh starts beside it was stopped (infra.sh down-kafka): unused`)
      s3 = s3Client(infra.env)
      const stamp = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`
      const u = { ctx, k, s3, infra, infraEnv: infra.env, media, warmupMedia, clientsFile, stamp, timeoutMs: k.timeoutS * 1000 }

      const main = { partSize: k.partSize, queueSize: k.queueSize, bufferBytes: k.bufferBytes, nodeArgs: [], direct: true, tusPatchBytes: k.tusPatchBytes }
      rows.push(...await runConfig(u, main, 'gateway'))
      const gw = rows.find(r => r.label === 'gateway' && r.concurrency === maxC && !r.error)
      const lean = { ...main, bufferBytes: k.lean.slabs * main.partSize, nodeArgs: k.lean.nodeArgs, direct: false, tusPatchBytes: 0 }
      const leanWhat = `${lean.nodeArgs.join(' ')}, STORAGE_BUFFER_BYTES=${lean.bufferBytes}`
      if (k.variant === 'always' || (k.variant === 'auto' && gw && gw.peakRssBytes > TARGETS.rssBytes)) {
        log(`evidence / gateway-lean: ${leanWhat}` + (k.variant === 'auto' ? ` (the default's ×${maxC} peak RSS ${fmt.mib(gw.peakRssBytes)} is over the target)` : ''))
        rows.push(...await runConfig(u, lean, 'gateway-lean'))
      } else if (k.variant === 'auto' && gw) {
        notes.push(`gateway-lean (${leanWhat}) not run: the default's ×${maxC} peak RSS is within the target (BENCH_EVIDENCE_VARIANT=always runs it anyway)`)
      }
    } finally {
      s3?.destroy()
      await infra?.stop()
    }
    notes.push(...readRows(rows, ctx, maxC))
    return { rows, columns: COLUMNS, compareBy: 'vsDirect', notes }
  }
}
