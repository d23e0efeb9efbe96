// The rows of one part/queue setting: for each concurrency and repeat, a run
// of the direct baseline then one through a gateway that stays up for all of
// them (as in production), warmed up once; its access log read at the end.
import { gateway } from '../../lib/targets.mjs'
import { interrupted } from '../../lib/procs.mjs'
import { accessLogStats, formatStatuses, formatProblems, logSize, unexpectedStatuses } from '../../lib/logs.mjs'
import { login } from '../../lib/login.mjs'
import { awsEnv, emptyBucket, QUIET_SDK } from '../../lib/s3.mjs'
import { direct, viaGateway, evidenceClient } from './uploads.mjs'
import { aggregate } from './rows.mjs'

function gatewayOf (u, cfg, label, bucket) {
  const aws = awsEnv(u.infraEnv)
  return gateway({
    label,
    nodeArgs: cfg.nodeArgs,
    env: {
      STORAGE: 's3',
      BUS: 'local',
      S3_ENDPOINT: u.infraEnv.S3_ENDPOINT,
      S3_FORCE_PATH_STYLE: 'true',
      S3_BUCKET: bucket,
      S3_REGION: aws.AWS_REGION,
      S3_PART_SIZE: String(cfg.partSize),
      S3_QUEUE_SIZE: String(cfg.queueSize),
      STORAGE_BUFFER_BYTES: String(cfg.bufferBytes),
      AUTH_CLIENTS_FILE: u.clientsFile,
      ...aws,
      ...QUIET_SDK
    }
  })
}

/** Started, logged in, and (with a warm-up file) one untimed upload sent. */
async function startGateway (u, target, bucket) {
  const server = await u.ctx.start(target)
  try {
    server.token = await login(server.url)
    server.logStart = logSize(server.logFile)
    if (u.warmupMedia) {
      u.ctx.log(`  ${target.label}: warm-up upload (${u.k.warmupBytes} bytes)`)
      const w = await evidenceClient(u, server, { file: u.warmupMedia.file, size: u.k.warmupBytes, concurrency: 1, runId: `${u.stamp}-${target.label}-warmup` })
      const x = w.out.uploads[0]
      if (x.status !== 202) throw new Error(`warm-up upload answered ${x.status ?? x.error}: ${x.body ?? ''}`)
      await emptyBucket(u.s3, bucket)
    }
  } catch (err) {
    await u.ctx.stop(server).catch(() => {})
    throw err
  }
  return server
}

/** The statuses of the gateway's access log against the 202s its rows and warm-up expect. */
function readAccessLog (u, logFile, from, gwRows) {
  const stats = accessLogStats(logFile, from)
  const expected = gwRows.reduce((a, r) => a + r.concurrency, 0) + (u.warmupMedia ? 1 : 0)
  // A tus row's uploads answer 201 (creation) and 204 (each PATCH) before their commit's 202.
  const others = unexpectedStatuses(stats.statuses, ['202', '200', '201', '204'])
  for (const r of gwRows) r.accessLog = { statuses: stats.statuses, expected202: expected, problems: stats.problems }
  if (Object.keys(others).length || stats.problems.length || (stats.statuses['202'] ?? 0) !== expected) {
    const msg = `access log (warm-up and measured uploads): ${formatStatuses(stats.statuses) || 'no request lines'} (expected 202×${expected})` +
      (stats.problems.length ? `; warn/error lines: ${formatProblems(stats.problems)}` : '')
    for (const r of gwRows) r.notes.push(msg)
    if (Object.keys(others).length) for (const r of gwRows) r.problems.push(`non-202 answers in the access log: ${formatStatuses(others)}`)
  }
}

/**
 * Direct and gateway rows of one part/queue setting, concurrency by
 * concurrency; with `cfg.tusPatchBytes`, a row of resumable (tus) uploads
 * through the same gateway after each multipart one.
 */
export async function runConfig (u, cfg, gwLabel) {
  const { ctx, k } = u
  const runs = [] // one entry per run; aggregated into rows at the end
  const bucket = `bench-evidence-${u.stamp}-${gwLabel}`
  const target = gatewayOf(u, cfg, gwLabel, bucket)
  const failed = (label, c, rep, err, extra) => {
    ctx.warn(`${label} ×${c}: ${err.message}`)
    runs.push({ label, concurrency: c, rep, partSize: cfg.partSize, queueSize: cfg.queueSize, ...extra, error: err.message, problems: [err.message] })
  }
  let server
  try {
    for (const c of k.concurrency) {
      for (let rep = 1; rep <= k.repeat; rep++) {
        if (interrupted()) throw new Error('interrupted')
        if (cfg.direct) {
          try {
            runs.push({ ...await direct(u, cfg, c, rep), rep })
          } catch (err) {
            failed('direct-lib-storage', c, rep, err, { baseline: true })
            await emptyBucket(u.s3, `bench-direct-${u.stamp}`).catch(() => {})
          }
        }
        try {
          server ??= await startGateway(u, target, bucket)
          runs.push({ ...await viaGateway(u, server, cfg, c, gwLabel, rep), rep })
        } catch (err) {
          failed(gwLabel, c, rep, err)
          if (server && !server.alive()) {
            await ctx.stop(server).catch(() => {})
            server = undefined
          }
        }
        if (!cfg.tusPatchBytes) continue
        const tusLabel = `${gwLabel}-tus`
        try {
          server ??= await startGateway(u, target, bucket)
          runs.push({ ...await viaGateway(u, server, cfg, c, tusLabel, rep, cfg.tusPatchBytes), rep })
        } catch (err) {
          failed(tusLabel, c, rep, err)
          if (server && !server.alive()) {
            await ctx.stop(server).catch(() => {})
            server = undefined
          }
        }
      }
    }
  } finally {
    if (server) {
      await ctx.stop(server).catch(err => ctx.warn(`${gwLabel}: stop failed: ${err.message}`))
      // After the stop: pino's log is flushed on shutdown.
      readAccessLog(u, server.logFile, server.logStart ?? 0, runs.filter(r => (r.label === gwLabel || r.label === `${gwLabel}-tus`) && !r.error))
    }
  }
  return aggregate(runs)
}
