// `npm run bench load -- --url <base> --client-id … --client-secret … [...]`:
// a fixed rate of the spec's requests against any deployment, open loop
// (bench/load/driver.mjs), a progress line each second, a report at the end
// (bench/load/report.mjs). Options: bench/load/args.mjs, or --help.
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { UsageError } from '../lib/env.mjs'
import { timeline } from './plan.mjs'
import { randomBytes } from 'node:crypto'
import { Pool } from 'undici'
import { parseArgs, USAGE } from './args.mjs'
import { requestBuilders, kindSequence } from './requests.mjs'
import { session as newSession } from './session.mjs'
import { Recorder } from './recorder.mjs'
import { drive } from './driver.mjs'
import { streams as openStreams } from './stream.mjs'
import { tusUploads } from './tus.mjs'
import { progressLine, report } from './report.mjs'
import { BENCH_DIR } from '../lib/paths.mjs'

const say = line => process.stderr.write(line)

/** Resolves to the exit code: 0 when every request succeeded, 1 otherwise; throws UsageError (2) on bad options. */
export async function load (argv) {
  const o = parseArgs(argv)
  if (o.help) { process.stdout.write(USAGE + '\n'); return 0 }
  o.out ??= process.env.BENCH_RESULTS_DIR || join(BENCH_DIR, 'results')
  const timeoutMs = o.timeout * 1000
  const record = await userRecord(o)
  const schedule = o.stages === undefined ? undefined : timeline(o.stages)
  const runId = `${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`
  const target = new URL(o.url)

  const session = newSession({ ...o, timeoutMs })
  say(`load: logging in at ${o.authUrl}/api/v1/login as ${o.clientId}\n`)
  try {
    await session.start()
  } catch (err) {
    say(`load: cannot log in: ${err.message}${err.cause ? ` (${err.cause.code ?? err.cause.message})` : ''}\n`)
    return 1
  }

  const pool = new Pool(target.origin, { connections: o.connections, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: timeoutMs })
  const streams = openStreams({ url: target.origin, prefix: target.pathname.replace(/\/+$/, ''), connections: o.connections, session, runId })
  const uploads = tusUploads({ pool, origin: target.origin, prefix: target.pathname.replace(/\/+$/, ''), media: randomBytes(Math.max(1, o.mediaBytes)), cutAfter: o.tusCutAfter, timeoutMs })
  const rec = new Recorder(Object.keys(o.mix))
  const stop = { stopped: false }
  const onSignal = () => {
    if (stop.stopped) process.exit(130)
    stop.stopped = true
    say('\nload: stopping: no more requests; waiting for the answers (again to quit now)\n')
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  const startedAt = new Date()
  const t0 = performance.now()
  const live = process.stderr.isTTY
  const ticker = setInterval(() => {
    say((live ? '\r\x1b[K' : '') + progressLine(rec, o, (performance.now() - t0) / 1000) + (live ? '' : '\n'))
    rec.window = rec.newWindow()
  }, 1000)
  say(`load: ${schedule?.length ?? Math.round(o.rate * o.duration)} requests ${schedule === undefined ? `at ${o.rate}/s` : `in stages ${o.stages.map(s => `${s.seconds}s:${s.rate}`).join(',')}`} to ${o.url} (run ${runId})\n`)
  let run
  try {
    run = await drive({
      pool,
      streams,
      uploads,
      rate: o.rate,
      duration: o.duration,
      schedule,
      nextKind: kindSequence(o.mix),
      builders: requestBuilders({ runId, prefix: target.pathname.replace(/\/+$/, ''), assets: o.assets, mediaBytes: o.mediaBytes, batchSize: o.batchSize, record }),
      session,
      rec,
      timeoutMs,
      maxInFlight: o.maxInFlight,
      stop
    })
  } finally {
    clearInterval(ticker)
    if (live) say('\n')
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    streams.close()
    await pool.destroy()
  }
  const elapsedSeconds = schedule === undefined ? run.scheduled / o.rate : (schedule[run.scheduled - 1] ?? 0) / 1000
  return report({ o, rec, run: { ...run, runId }, startedAt, elapsedSeconds, session, interrupted: stop.stopped })
}

/** The record function of --body (that record, as it is) or --body-module (its default export), or undefined for the spec's example. */
async function userRecord (o) {
  if (o.body !== undefined) {
    const text = JSON.stringify(o.body)
    return () => text
  }
  if (o.bodyModule === undefined) return undefined
  let mod
  try {
    mod = await import(pathToFileURL(resolve(o.bodyModule)).href)
  } catch (err) {
    throw new UsageError(`--body-module: cannot load ${o.bodyModule}: ${err.message}`)
  }
  if (typeof mod.default !== 'function') throw new UsageError(`--body-module: ${o.bodyModule} must export a default function (i) => record`)
  return mod.default
}
