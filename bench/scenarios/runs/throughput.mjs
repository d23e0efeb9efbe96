// Phase 1 of the runs scenario: wrk POST /runs:start, then the server's
// LMDB (bench/baselines/runs-db-stats.mjs, read-only, while it still runs):
// how many runs ended in the window and how fast, and whether they were
// stored and published whole.
import { join } from 'node:path'
import { runNode } from '../../lib/child.mjs'
import { BENCH_DIR } from '../../lib/paths.mjs'
import { fmt } from '../../lib/format.mjs'
import { REQUEST } from './knobs.mjs'
import { onServer } from './on-server.mjs'

const DB_STATS = join(BENCH_DIR, 'baselines', 'runs-db-stats.mjs')
const EVENTS = '1:run.queued,2:run.started,3:echo.step,4:run.completed'

/** The server's runs from its LMDB, after waiting up to waitS for the ones in flight. */
async function dbStats (ctx, server, { from = 0, to = Date.now(), waitS, sample = 0 }) {
  const { out } = await runNode({
    label: 'runs-db-stats',
    script: DB_STATS,
    config: { dataDir: server.dataDir, from, to, waitMs: waitS * 1000, sample },
    cpu: ctx.wrkCpu,
    timeoutMs: (waitS + 60) * 1000
  })
  return out
}

/** GET /runs/{id} and the replayed stream of a few runs: 200, succeeded, the four events, the end. */
async function checkApi (server, ids) {
  const bad = []
  for (const id of ids) {
    try {
      const rec = await fetch(new URL(`/runs/${id}`, server.url), { signal: AbortSignal.timeout(5000) })
      const body = await rec.json().catch(() => undefined)
      if (rec.status !== 200 || body?.status !== 'succeeded') { bad.push(`GET /runs/${id}: ${rec.status} ${body?.status}`); continue }
      const st = await fetch(new URL(`/runs/${id}/stream`, server.url), { signal: AbortSignal.timeout(5000) })
      const text = await st.text()
      const events = [...text.matchAll(/^event: (.+)$/gm)].map(m => m[1])
      if (st.status !== 200 || events.join(',') !== 'run.queued,run.started,echo.step,run.completed') bad.push(`GET /runs/${id}/stream: ${st.status}, events ${events.join(',')}`)
    } catch (err) {
      bad.push(`${id}: ${err.message}`)
    }
  }
  return bad
}

/** What the database says about the window's runs: rates, lags, and whatever is missing. */
function readDb (r, d, k) {
  const w = d.window
  r.db = d
  r.runsCreated = w.created
  r.completedPerSec = w.endedInWindow / r.windowSeconds
  r.completionLagMs = w.lagMs
  r.backlogAtEnd = w.backlogAtEnd
  r.drainMs = w.drainMs
  const notOk = w.created - w.createdSucceeded
  if (d.inFlightAtEnd > 0) r.problems.push(`${d.inFlightAtEnd} runs still queued/running ${k.drainWaitS} s after the load`)
  if (notOk > 0) r.problems.push(`${notOk} of ${w.created} runs created during the load did not succeed: ${JSON.stringify(w.createdByStatus)}`)
  // Every accepted request is a run (plus the probe); more 202s than runs would be lost runs.
  if (w.created + 5 < r.accepted) r.problems.push(`${r.accepted} requests answered 2xx but only ${w.created} runs stored in the window`)
  const wrongEvents = d.sample.filter(s => s.events.join(',') !== EVENTS)
  if (wrongEvents.length) r.problems.push(`stored events not queued/running/step/succeeded: ${wrongEvents.slice(0, 2).map(s => `${s.run_id} ${s.events.join(',')}`).join('; ')}`)
  // The rate over the window, by thirds (the last second is partial: left out).
  const per = (w.createdPerSecond ?? []).slice(0, -1)
  if (per.length >= 6) {
    const third = Math.floor(per.length / 3)
    const avg = xs => xs.reduce((a, b) => a + b, 0) / xs.length
    r.rateFirstThird = avg(per.slice(0, third))
    r.rateLastThird = avg(per.slice(-third))
    if (r.rateLastThird < 0.85 * r.rateFirstThird) r.notes.push(`the rate sagged during the run: ${fmt.count(r.rateFirstThird)} runs/s created in its first third, ${fmt.count(r.rateLastThird)} in its last, as the database grew to ${fmt.count(d.total)} runs (per second: ${per.join(' ')})`)
  }
  if (d.busMessages !== undefined && d.busMessages < 4 * d.total) r.problems.push(`bus log holds ${d.busMessages} run messages for ${d.total} runs (4 each expected), ${(d.busWaitMs / 1000).toFixed(1)} s after the last run ended`)
  else if (d.busWaitMs > 1000) r.notes.push(`the bus log caught up with the runs ${(d.busWaitMs / 1000).toFixed(1)} s after the last one ended (run events are published to the bus after they are stored and streamed)`)
}

export async function throughput (ctx, k, target) {
  const { settings, log } = ctx
  const r = { phase: 'throughput', label: target.label, baseline: target.kind === 'baseline' || undefined, problems: [], notes: [] }
  return onServer(ctx, target, r, async server => {
    r.mode = server.mode ?? 'gateway'
    let warmup
    if (settings.warmup > 0) {
      log(`  ${target.label}: warm-up ${settings.warmup} s`)
      const w = await ctx.wrk({ url: server.url, request: REQUEST, duration: settings.warmup })
      warmup = { seconds: settings.warmup, reqPerSec: w.reqPerSec, non2xx3xx: w.non2xx3xx, socketErrors: w.socketErrors }
      if (server.persisted) {
        // Let the warm-up's runs end, so they are not counted in the window.
        const d = await dbStats(ctx, server, { waitS: k.drainWaitS })
        warmup.runs = d.total
        warmup.inFlightAfterWait = d.inFlightAtEnd
      }
    }
    const from = Date.now()
    const m = await ctx.measure(server, REQUEST, { warmup: 0 })
    const to = Date.now()
    Object.assign(r, m, { phase: 'throughput', label: target.label, problems: [...r.problems, ...m.problems], notes: [...r.notes, ...m.notes], warmup })
    r.windowSeconds = (to - from) / 1000
    r.accepted = m.requests - m.non2xx3xx
    r.acceptedPerSec = r.accepted / m.durationSeconds
    if (!server.persisted || !server.alive()) return
    log(`  ${target.label}: reading its LMDB (waiting up to ${k.drainWaitS} s for the runs in flight)`)
    const d = await dbStats(ctx, server, { from, to, waitS: k.drainWaitS, sample: server.api ? 10 : 3 })
    readDb(r, d, k)
    if (server.api) {
      const bad = await checkApi(server, d.sample.map(s => s.run_id))
      r.apiCheck = { runs: d.sample.length, bad }
      if (bad.length) r.problems.push(`API check of ${d.sample.length} runs: ${bad.slice(0, 3).join('; ')}`)
    }
  })
}
