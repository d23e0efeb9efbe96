// Phases 2 and 3 of the runs scenario, driven by bench/baselines/runs-client.mjs:
// SSE delivery latency at a load point, and subscribers held against RSS.
import { join } from 'node:path'
import { runNode } from '../../lib/child.mjs'
import { BENCH_DIR } from '../../lib/paths.mjs'
import { sampleWhile, othersCpu } from '../../lib/sampler.mjs'
import { notQuiet } from '../../lib/verdicts.mjs'
import { fmt } from '../../lib/format.mjs'
import { onServer } from './on-server.mjs'

const CLIENT = join(BENCH_DIR, 'baselines', 'runs-client.mjs')
const PREFIX = 'runs-client: '

/** runs-client.mjs with `config`, on the load CPU, its progress lines logged. */
function runClient (ctx, k, label, config, timeoutMs, onStart) {
  const onStderrLine = line => { if (line.startsWith(PREFIX)) ctx.log(`    ${line.slice(PREFIX.length)}`) }
  return runNode({ label, script: CLIENT, config, cpu: ctx.wrkCpu, nofile: k.nofile, timeoutMs, onStart, onStderrLine })
}

/** A row of `phase` on `target`: the client run against it while the server's RSS and CPU are sampled. */
async function withClient (ctx, k, target, phase, config, timeoutMs) {
  const { settings, log } = ctx
  const r = { phase, label: target.label, baseline: target.kind === 'baseline' || undefined, problems: [], notes: [] }
  await onServer(ctx, target, r, async server => {
    const base = { host: '127.0.0.1', port: server.port }
    if (phase === 'delivery' && settings.warmup > 0) {
      log(`  ${target.label}: warm-up ${settings.warmup} s`)
      await runClient(ctx, k, 'runs-client (warm-up)', { ...base, ...config, runs: config.concurrency * 4, seconds: settings.warmup, steps: Math.min(config.steps, 20) }, (settings.warmup + 120) * 1000)
    }
    log(`  ${target.label}: ${phase}`)
    let clientPid
    const { value: c, proc: s, system } = await sampleWhile(server.pid, [], watch =>
      runClient(ctx, k, 'runs-client', { ...base, ...config, gatewayPid: server.pid }, timeoutMs, pid => { clientPid = pid; watch(pid) }))
    r.system = system
    r.peakRssBytes = s.peakRssBytes
    r.peakRssSource = s.peakRssSource
    r.serverCpu = s.cpuFraction
    r.clientCpu = s.otherCpuFraction[clientPid]
    r.othersCpu = othersCpu(system, s.cpuFraction, r.clientCpu)
    r.client = c.out
  })
  if (r.othersCpu > settings.busyThreshold) r.notes.push(notQuiet(r.othersCpu, ` (per CPU: ${r.system.perCpuBusy.map(fmt.pct).join(', ')})`))
  return r
}

export async function delivery (ctx, k, target, s, loadName) {
  const perRun = s.steps * Math.max(1, s.delayMs) * 3 + 30000
  const r = await withClient(ctx, k, target, 'delivery', { mode: 'delivery', ...s }, (s.seconds * 1000) + perRun + 60000)
  r.load = loadName
  r.loadPoint = s
  const c = r.client
  if (!c) return r
  r.subscribers = s.concurrency * s.subscribers
  r.deliveryMs = c.latencyMs.live
  r.completedMs = c.latencyMs.succeeded
  r.storedEventsPerSec = c.storedEventsPerSec
  r.eventsPerSec = c.eventsPerSec
  const p = c.problems
  const startErrors = Object.values(p.startErrors).reduce((a, b) => a + b, 0)
  if (startErrors) r.problems.push(`${startErrors} POST /runs:start failed: ${JSON.stringify(p.startErrors)}`)
  if (p.incomplete || p.wrongOrder || p.notSucceeded || p.overflow || p.timeouts) {
    r.problems.push(`of ${c.streams} streams: ${p.incomplete} incomplete, ${p.wrongOrder} out of order, ${p.notSucceeded} without run.completed, ${p.overflow} overflowed, ${p.timeouts} timed out${Object.keys(p.streamErrors).length ? `, errors ${JSON.stringify(p.streamErrors)}` : ''}`)
  }
  if (p.examples.length) r.notes.push(`e.g. ${p.examples.slice(0, 3).join(' | ')}`)
  if (c.latencyMs.succeeded.n === 0) r.problems.push('no run.completed delivery measured')
  if (c.clientLoopDelayMs.p99 > 5) r.notes.push(`the client's own event loop p99 delay was ${c.clientLoopDelayMs.p99.toFixed(1)} ms: part of the latency is the client's`)
  return r
}

/** One row per subscriber level, the phase's CPU and peak figures on each, the cancel on the last. */
function levelRows (r, c, cap) {
  const rows = c.levels.map((l, i) => ({
    ...r,
    label: r.label,
    level: l.level,
    levelStats: l,
    rssBeforeBytes: c.rssBeforeBytes,
    rssBytes: l.rssBytes,
    perSubscriberBytes: l.perSubscriberBytes,
    client: i === c.levels.length - 1 ? c : undefined,
    problems: [...r.problems],
    notes: i === c.levels.length - 1 ? [...r.notes] : []
  }))
  rows.forEach((row, i) => {
    // Between this level and the previous one: without the fixed costs the first streams bring (heap growth, buffers).
    const prev = i > 0 ? rows[i - 1] : { rssBytes: c.rssBeforeBytes, levelStats: { opened: 0 } }
    const n = row.levelStats.opened - prev.levelStats.opened
    row.marginalPerSubscriberBytes = n > 0 ? (row.rssBytes - prev.rssBytes) / n : undefined
    const l = row.levelStats
    if (l.opened < l.level) row.problems.push(`${l.level - l.opened} of ${l.level} streams never opened: ${JSON.stringify(l.errors)}`)
    if (l.alive < l.opened) row.problems.push(`${l.opened - l.alive} open streams got no step during the ${cap.holdMs} ms hold (${l.closed} closed)`)
  })
  return rows
}

export async function capacity (ctx, k, target, hardLimit) {
  const cap = k.cap
  const max = cap.levels.at(-1)
  if (hardLimit !== undefined && max + 200 > Math.min(k.nofile, hardLimit)) {
    ctx.warn(`capacity: ${max} subscribers need about ${max + 200} file descriptors per process, the limit is ${Math.min(k.nofile, hardLimit)} (ulimit -Hn ${hardLimit}): expect EMFILE`)
  }
  if (cap.holdMs <= cap.delayMs) ctx.warn(`capacity: BENCH_RUNS_HOLD_MS (${cap.holdMs}) is not longer than the step interval (${cap.delayMs} ms): streams may get no step during the hold and count as not alive`)
  const timeoutMs = (cap.levels.length * (cap.holdMs + 60000)) + 120000
  const r = await withClient(ctx, k, target, 'capacity', { mode: 'capacity', ...cap }, timeoutMs)
  const c = r.client
  if (!c) return [r]
  const rows = levelRows(r, c, cap)
  const last = rows.at(-1)
  const x = c.cancel
  last.cancel = x
  if (x.gotTerminal < x.streamsOpen || x.endedCleanly < x.streamsOpen) last.problems.push(`after cancelling the ${x.runs} runs, ${x.streamsOpen - x.gotTerminal} of ${x.streamsOpen} streams got no run.failed (cancelled) and ${x.streamsOpen - x.endedCleanly} no clean end`)
  const startErrors = Object.values(c.problems.startErrors).reduce((a, b) => a + b, 0)
  if (startErrors) last.problems.push(`${startErrors} POST /runs:start failed: ${JSON.stringify(c.problems.startErrors)}`)
  return rows
}
