// The run harness (HARNESS_PORT): three phases, each beside a baseline
// measured in the same run.
//
//   throughput  wrk POST /runs:start {"message":"hello","mode":"echo"}: 202s
//               per second and their latency, then, from the server's LMDB
//               (bench/baselines/runs-db-stats.mjs, read-only, while it still
//               runs), how many runs actually ended and how fast. Rows:
//                 bare-uws          runs-uws.mjs MODE=bare: body read, parsed, 202 (the ceiling)
//                 uws-lmdb-put      + one awaited LMDB put of the queued record
//                 uws-lmdb-run      + every LMDB write of an echo run (4 record+event
//                                   transactions, 4 bus messages, one LMDB value per batch)
//                 gateway           node bin/gateway.js start, ROLES=harness, LOG_LEVEL=info
//                 gateway-log-warn  the same at LOG_LEVEL=warn: no access-log line
//   delivery    bench/baselines/runs-client.mjs keeps K echo runs (N steps,
//               D ms apart) in flight, S streams each, and times every
//               run.completed from the server's ended_at stamp to its arrival
//               (same machine, same clock), at a light load (10 × 2) and at
//               the full one (50 × 4). Rows: uws-sse-memory (runs-uws.mjs
//               MODE=memory: the same SSE, nothing persisted), gateway.
//   capacity    the same client opens streams on in-flight runs up to each
//               level (1,000, 5,000, 10,000) and reads the server's VmRSS;
//               then cancels the runs and times the end of every stream.
//               Rows: uws-sse-memory, gateway.
//
// Servers on the server CPU, wrk / the client / the LMDB reader on the load
// CPU; every server and client started through `sh -c 'ulimit -n ...'`.
import { spawn, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { startServer, pinned, track, tempDir, freePort, interrupted } from '../lib/procs.mjs'
import { checkBuild, BENCH_DIR, REPO_DIR } from '../lib/targets.mjs'
import { sampleSystem } from '../lib/sampler.mjs'
import { fmt, table } from '../lib/report.mjs'
import { accessLogStats, formatStatuses, logSize } from '../lib/logs.mjs'

const BASELINE = join(BENCH_DIR, 'baselines', 'runs-uws.mjs')
const CLIENT = join(BENCH_DIR, 'baselines', 'runs-client.mjs')
const DB_STATS = join(BENCH_DIR, 'baselines', 'runs-db-stats.mjs')
const MiB = 1024 * 1024
const KiB = 1024
const PHASES = ['throughput', 'delivery', 'capacity']
const REQUEST = { method: 'POST', path: '/runs:start', body: { message: 'hello', mode: 'echo' }, expectStatus: s => s === 202 }

// The issue's targets (for the bench, not the tests).
const TARGETS = { runsPerSec: 5000, deliveryP99Ms: 10, subscribers: 10000, rssBytes: 1024 * MiB }

function intEnv (name, def, min = 0) {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return def
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(raw)}`)
  return Number(raw)
}

function listEnv (name, def) {
  const raw = process.env[name]
  return raw === undefined || raw.trim() === '' ? def : raw.split(',').map(s => s.trim()).filter(Boolean)
}

function lightLoad (raw) {
  const v = raw.trim()
  if (v === '' || v === '0') return undefined
  const m = /^(\d+)\s*[x×]\s*(\d+)$/.exec(v)
  if (!m || Number(m[1]) < 1 || Number(m[2]) < 1) throw new Error(`BENCH_RUNS_SSE_LIGHT must look like 10x2 (runs in flight x streams per run) or be empty, got ${JSON.stringify(raw)}`)
  return { concurrency: Number(m[1]), subscribers: Number(m[2]) }
}

function knobs () {
  const phases = listEnv('BENCH_RUNS_PHASES', PHASES)
  const bad = phases.filter(p => !PHASES.includes(p))
  if (bad.length) throw new Error(`BENCH_RUNS_PHASES: unknown ${bad.join(', ')} (known: ${PHASES.join(', ')})`)
  const levels = listEnv('BENCH_RUNS_SUBSCRIBERS', ['1000', '5000', '10000']).map(Number)
  if (levels.some(n => !Number.isInteger(n) || n < 1) || levels.some((n, i) => i > 0 && n <= levels[i - 1])) throw new Error('BENCH_RUNS_SUBSCRIBERS must list increasing integers, e.g. 1000,5000,10000')
  return {
    phases,
    roles: process.env.BENCH_RUNS_ROLES || 'harness',
    nofile: intEnv('BENCH_RUNS_NOFILE', 65536, 1024),
    drainWaitS: intEnv('BENCH_RUNS_DRAIN_WAIT', 30, 1),
    sse: {
      concurrency: intEnv('BENCH_RUNS_SSE_CONCURRENCY', 50, 1),
      subscribers: intEnv('BENCH_RUNS_SSE_SUBSCRIBERS', 4, 1),
      steps: intEnv('BENCH_RUNS_SSE_STEPS', 200, 1),
      delayMs: intEnv('BENCH_RUNS_SSE_DELAY_MS', 5, 0),
      runs: intEnv('BENCH_RUNS_SSE_RUNS', 2000, 1),
      seconds: intEnv('BENCH_RUNS_SSE_SECONDS', 60, 1)
    },
    // A light load point before the full one: "CxS" (runs in flight × streams each); empty or 0 to skip.
    light: lightLoad(process.env.BENCH_RUNS_SSE_LIGHT ?? '10x2'),
    cap: {
      levels,
      runs: intEnv('BENCH_RUNS_CAP_RUNS', 100, 1),
      delayMs: intEnv('BENCH_RUNS_CAP_DELAY_MS', 1000, 1),
      holdMs: intEnv('BENCH_RUNS_HOLD_MS', 5000, 0),
      batch: intEnv('BENCH_RUNS_CONNECT_BATCH', 250, 1)
    }
  }
}

/** `sh -c 'ulimit -n N (or the hard limit); exec cmd args'`: servers and the client hold thousands of sockets. */
function withNofile (nofile, cmd, args) {
  return ['sh', ['-c', `ulimit -n ${nofile} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`, cmd, ...args]]
}

function hardNofile () {
  const r = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' })
  const v = r.stdout?.trim()
  return v === 'unlimited' ? Infinity : Number(v) || undefined
}

/** The gateway with only the harness role (BENCH_RUNS_ROLES), on a fresh DATA_DIR. */
function gatewayTarget (k, { label = 'gateway', logLevel } = {}) {
  return {
    label,
    kind: 'gateway',
    async start (ctx) {
      checkBuild(ctx.warn)
      const level = logLevel ?? ctx.settings.logLevel
      const dataDir = tempDir('bench-runs-data-')
      const logsListening = ['info', 'debug', 'trace'].includes(level)
      const harnessPort = logsListening ? 0 : await freePort()
      const [cmd, args] = withNofile(k.nofile, process.execPath, [...ctx.nodeArgsFor(label), join(REPO_DIR, 'bin', 'gateway.js'), 'start'])
      const server = await startServer({
        label,
        cmd,
        args,
        cwd: REPO_DIR,
        cpu: ctx.serverCpu,
        dir: ctx.tmpDir,
        env: { ...process.env, HOST: '127.0.0.1', PORT: '0', HARNESS_PORT: String(harnessPort), DATA_DIR: dataDir, LOG_LEVEL: level, ROLES: k.roles },
        // With ROLES=harness the line has no `port`, only `harnessPort`.
        ready: line => {
          if (!line.includes('gateway listening')) return undefined
          try { const o = JSON.parse(line); return o.msg === 'gateway listening' && o.harnessPort > 0 ? o.harnessPort : undefined } catch { return undefined }
        },
        readyHttp: logsListening ? undefined : { port: harnessPort, path: '/health' }
      })
      return { ...server, dataDir, logLevel: level, persisted: true, api: true }
    }
  }
}

function baselineTarget (k, label, mode) {
  return {
    label,
    kind: 'baseline',
    async start (ctx) {
      const dataDir = mode.startsWith('lmdb') ? tempDir('bench-runs-data-') : undefined
      const [cmd, args] = withNofile(k.nofile, process.execPath, [...ctx.nodeArgsFor(label), BASELINE])
      const server = await startServer({
        label,
        cmd,
        args,
        cwd: REPO_DIR,
        cpu: ctx.serverCpu,
        dir: ctx.tmpDir,
        env: { ...process.env, HOST: '127.0.0.1', PORT: '0', MODE: mode, ...(dataDir ? { DATA_DIR: dataDir } : {}) },
        ready: line => {
          try { const o = JSON.parse(line); return o.msg === 'runs-uws listening' && o.port > 0 ? o.port : undefined } catch { return undefined }
        }
      })
      return { ...server, dataDir, mode, persisted: mode === 'lmdb-run', api: mode === 'memory' }
    }
  }
}

/** Runs a node script (pinned, with the fd limit) that prints one JSON line; resolves to { out, pid, stderr }. */
function runNode ({ label, script, config, cpu, nofile, timeoutMs, onStart, log }) {
  const [c0, a0] = withNofile(nofile, process.execPath, [script, JSON.stringify(config)])
  const [cmd, args] = pinned(cpu, c0, a0)
  return new Promise((resolve, reject) => {
    const child = track(spawn(cmd, args, { cwd: REPO_DIR, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] }))
    let out = ''
    let err = ''
    let partial = ''
    child.stdout.setEncoding('utf8').on('data', d => { out += d })
    child.stderr.setEncoding('utf8').on('data', d => {
      err = (err + d).slice(-4000)
      const lines = (partial + d).split('\n')
      partial = lines.pop()
      for (const l of lines) if (l.startsWith('runs-client: ')) log?.(`    ${l.slice(13)}`)
    })
    const watchdog = setTimeout(() => { err += `\nbench: ${label} overran ${timeoutMs} ms, killed`; child.kill('SIGKILL') }, timeoutMs)
    child.once('spawn', () => onStart?.(child.pid))
    child.once('error', e => { clearTimeout(watchdog); reject(new Error(`cannot run ${label}: ${e.message}`)) })
    child.once('close', (code, signal) => {
      clearTimeout(watchdog)
      let parsed
      try { parsed = JSON.parse(out.trim().split('\n').pop()) } catch {}
      if (code !== 0 || !parsed) return reject(new Error(`${label} exited with ${code ?? signal}: ${err.trim().slice(-1500) || out.trim().slice(-500)}`))
      resolve({ out: parsed, pid: child.pid, stderr: err.trim() || undefined })
    })
  })
}

/** The server's runs from its LMDB, after waiting up to waitS for the ones in flight. */
function dbStats (ctx, k, server, { from = 0, to = Date.now(), waitS, sample = 0 } = {}) {
  return runNode({
    label: 'runs-db-stats',
    script: DB_STATS,
    config: { dataDir: server.dataDir, from, to, waitMs: (waitS ?? k.drainWaitS) * 1000, sample },
    cpu: ctx.wrkCpu,
    nofile: 1024,
    timeoutMs: ((waitS ?? k.drainWaitS) + 60) * 1000
  }).then(r => r.out)
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

const pct = v => (v === undefined || v === null || Number.isNaN(v) ? '-' : `${Math.round(v * 100)}%`)
const ms = v => (v === undefined || v === null ? '-' : v.toFixed(2))
const int = v => (v === undefined || v === null ? '-' : Math.round(v).toLocaleString('en-US'))
const kib = v => (v === undefined || v === null ? '-' : `${(v / KiB).toFixed(1)} KiB`)
const alive = s => s.child.exitCode === null && s.child.signalCode === null

function othersCpu (sys, ours) {
  return sys ? Math.max(0, sys.busyCores - ours - sys.runnerCores) : undefined
}

/** What limits a closed-loop throughput row, from the CPU figures (ctx.measure already notes a busy machine). */
function boundNote (ctx, r, connections) {
  if (r.serverCpu === undefined || !r.reqPerSec) return undefined
  const load = ctx.wrkCpu === undefined ? undefined : r.system?.perCpuBusy?.[ctx.wrkCpu]
  const where = `server ${pct(r.serverCpu)} of ${ctx.serverCpu === undefined ? 'a core' : `CPU${ctx.serverCpu}`}, wrk ${pct(r.wrkCpu)}`
  if (r.othersCpu > ctx.settings.busyThreshold) return `bound: unclear, other processes took ${pct(r.othersCpu)} of a core (${where})`
  if (r.serverCpu >= 0.9) return `bound: the server's CPU (${where})`
  if (r.wrkCpu >= 0.9 || load >= 0.9) return `bound: the load core (${where}): the figure is a lower bound`
  return `bound: neither core saturated (${where}): requests wait, ${(connections / r.reqPerSec * 1000).toFixed(1)} ms each in flight (connections / req/s), ` +
    (r.mode === 'bare' ? 'on nothing the server does' : 'for LMDB commits mostly (the 202 waits for the queued record\'s commit)')
}

function busyNote (ctx, r) {
  if (r.othersCpu !== undefined && r.othersCpu > ctx.settings.busyThreshold) {
    r.notes.push(`other processes used ${pct(r.othersCpu)} of a core (per CPU: ${r.system.perCpuBusy.map(b => pct(b)).join(', ')}): the machine was not quiet, figures are low and noisy; run again when it is idle`)
  }
}

/** Reads the access log after the server stopped (pino flushes on shutdown). */
function accessLog (r, server, from, expect) {
  const stats = accessLogStats(server.logFile, from)
  const bytes = logSize(server.logFile) - from
  r.accessLog = { ...stats, bytes, bytesPerLine: stats.requests ? bytes / stats.requests : undefined }
  if (server.logLevel && server.logLevel !== 'info') return
  const others = Object.entries(stats.statuses).filter(([s]) => !expect.includes(s) && s !== '499')
  if (others.length) r.problems.push(`unexpected statuses in the access log: ${formatStatuses(Object.fromEntries(others))}`)
  if (stats.problems.length) r.notes.push(`warn/error log lines: ${stats.problems.slice(0, 5).map(p => `${p.count}× ${p.msg}`).join(' | ')}`)
}

// --- phase 1 ---------------------------------------------------------------------------

/**
 * Starts `target`, runs `phase` against it, then checks the server is still alive, stops it and
 * counts its access log. A failure becomes a problem of row `r`; the server is always stopped.
 */
async function onServer (ctx, target, r, phase) {
  let server
  try {
    server = await ctx.start(target)
    const logFrom = logSize(server.logFile)
    await phase(server)
    if (!alive(server)) r.problems.push(`server died (code ${server.child.exitCode}, signal ${server.child.signalCode})`)
    await ctx.stop(server)
    accessLog(r, server, logFrom, ['202', '200'])
    server = undefined
  } catch (err) {
    ctx.warn(`${target.label}: ${err.message}`)
    r.error = err.message
    r.problems.push(err.message)
  } finally {
    if (server) await ctx.stop(server).catch(() => {})
  }
}

async function throughput (ctx, k, target) {
  const { settings, log } = ctx
  const r = { phase: 'throughput', label: target.label, problems: [], notes: [] }
  await onServer(ctx, target, r, async server => {
    r.mode = server.mode ?? 'gateway'
    if (settings.warmup > 0) {
      log(`  ${target.label}: warm-up ${settings.warmup} s`)
      const w = await ctx.wrk({ url: server.url, request: REQUEST, duration: settings.warmup })
      r.warmup = { seconds: settings.warmup, reqPerSec: w.reqPerSec, non2xx3xx: w.non2xx3xx, socketErrors: w.socketErrors }
      if (server.persisted) {
        // Let the warm-up's runs end, so they are not counted in the window.
        const d = await dbStats(ctx, k, server, { waitS: k.drainWaitS })
        r.warmup.runs = d.total
        r.warmup.inFlightAfterWait = d.inFlightAtEnd
      }
    }
    const from = Date.now()
    const m = await ctx.measure(server, REQUEST, { warmup: 0 })
    const to = Date.now()
    Object.assign(r, m, { phase: 'throughput', label: target.label, problems: [...r.problems, ...m.problems], notes: [...r.notes, ...m.notes], warmup: r.warmup })
    r.windowSeconds = (to - from) / 1000
    r.accepted = m.requests - m.non2xx3xx
    r.acceptedPerSec = r.accepted / m.durationSeconds
    if (server.persisted && alive(server)) {
      log(`  ${target.label}: reading its LMDB (waiting up to ${k.drainWaitS} s for the runs in flight)`)
      const d = await dbStats(ctx, k, server, { from, to, sample: server.api ? 10 : 3 })
      r.db = d
      const w = d.window
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
      const wrongEvents = d.sample.filter(s => s.events.join(',') !== '1:run.queued,2:run.started,3:echo.step,4:run.completed')
      if (wrongEvents.length) r.problems.push(`stored events not run.queued/run.started/echo.step/run.completed: ${wrongEvents.slice(0, 2).map(s => `${s.run_id} ${s.events.join(',')}`).join('; ')}`)
      // The rate over the window, by thirds (the last second is partial: left out).
      const per = (w.createdPerSecond ?? []).slice(0, -1)
      if (per.length >= 6) {
        const third = Math.floor(per.length / 3)
        const avg = xs => xs.reduce((a, b) => a + b, 0) / xs.length
        const first = avg(per.slice(0, third))
        const last = avg(per.slice(-third))
        r.rateFirstThird = first
        r.rateLastThird = last
        if (last < 0.85 * first) r.notes.push(`the rate sagged during the run: ${int(first)} runs/s created in its first third, ${int(last)} in its last, as the database grew to ${int(d.total)} runs (per second: ${per.join(' ')})`)
      }
      if (d.busMessages !== undefined && d.busMessages < 4 * d.total) r.problems.push(`bus log holds ${d.busMessages} run messages for ${d.total} runs (4 each expected), ${(d.busWaitMs / 1000).toFixed(1)} s after the last run ended`)
      else if (d.busWaitMs > 1000) r.notes.push(`the bus log caught up with the runs ${(d.busWaitMs / 1000).toFixed(1)} s after the last one ended (run events are published to the bus after they are stored and streamed)`)
      if (server.api) {
        const bad = await checkApi(server, d.sample.map(s => s.run_id))
        r.apiCheck = { runs: d.sample.length, bad }
        if (bad.length) r.problems.push(`API check of ${d.sample.length} runs: ${bad.slice(0, 3).join('; ')}`)
      }
    }
  })
  return r
}

// --- phases 2 and 3: the client ---------------------------------------------------------

async function withClient (ctx, k, target, phase, config, timeoutMs) {
  const { settings, log } = ctx
  const r = { phase, label: target.label, problems: [], notes: [] }
  await onServer(ctx, target, r, async server => {
    const base = { host: '127.0.0.1', port: server.port }
    if (phase === 'delivery' && settings.warmup > 0) {
      log(`  ${target.label}: warm-up ${settings.warmup} s`)
      await runNode({ label: 'runs-client (warm-up)', script: CLIENT, cpu: ctx.wrkCpu, nofile: k.nofile, timeoutMs: (settings.warmup + 120) * 1000, log,
        config: { ...base, ...config, runs: config.concurrency * 4, seconds: settings.warmup, steps: Math.min(config.steps, 20) } })
    }
    log(`  ${target.label}: ${phase}`)
    const sampler = ctx.sample(server.pid)
    const system = sampleSystem()
    let clientPid
    let c
    try {
      c = await runNode({ label: 'runs-client', script: CLIENT, cpu: ctx.wrkCpu, nofile: k.nofile, timeoutMs, log,
        config: { ...base, ...config, gatewayPid: server.pid }, onStart: pid => { clientPid = pid; sampler.watch(pid) } })
    } finally {
      const s = sampler.stop()
      r.system = system.stop()
      r.peakRssBytes = s.peakRssBytes
      r.peakRssSource = s.peakRssSource
      r.serverCpu = s.cpuFraction
      r.clientCpu = s.otherCpuFraction[clientPid]
      r.othersCpu = othersCpu(r.system, (s.cpuFraction ?? 0) + (r.clientCpu ?? 0))
    }
    r.client = c.out
  })
  busyNote(ctx, r)
  return r
}

async function delivery (ctx, k, target, s, loadName) {
  const perRun = s.steps * Math.max(1, s.delayMs) * 3 + 30000
  const r = await withClient(ctx, k, target, 'delivery', { mode: 'delivery', ...s }, (s.seconds * 1000) + perRun + 60000)
  r.load = loadName
  r.loadPoint = s
  const c = r.client
  if (!c) return r
  r.subscribers = s.concurrency * s.subscribers
  r.deliveryMs = c.latencyMs.succeeded
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

async function capacity (ctx, k, target, hardLimit) {
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
  // One row per level, the phase's CPU and peak figures on each.
  const rows = c.levels.map((l, i) => ({
    ...r,
    label: target.label,
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
  })
  for (const row of rows) {
    const l = row.levelStats
    if (l.opened < l.level) row.problems.push(`${l.level - l.opened} of ${l.level} streams never opened: ${JSON.stringify(l.errors)}`)
    if (l.alive < l.opened) row.problems.push(`${l.opened - l.alive} open streams got no step during the ${cap.holdMs} ms hold (${l.closed} closed)`)
  }
  const last = rows.at(-1)
  const x = c.cancel
  last.cancel = x
  if (x.gotTerminal < x.streamsOpen || x.endedCleanly < x.streamsOpen) last.problems.push(`after cancelling the ${x.runs} runs, ${x.streamsOpen - x.gotTerminal} of ${x.streamsOpen} streams got no run.failed (cancelled) and ${x.streamsOpen - x.endedCleanly} no clean end`)
  const startErrors = Object.values(c.problems.startErrors).reduce((a, b) => a + b, 0)
  if (startErrors) last.problems.push(`${startErrors} POST /runs:start failed: ${JSON.stringify(c.problems.startErrors)}`)
  return rows
}

// --- verdicts and tables ------------------------------------------------------------------

function verdicts (rows) {
  const notes = []
  const clean = r => !r.error && !(r.problems?.length)
  const flag = r => (clean(r) ? '' : ' (row flagged)')
  const busy = r => (r.othersCpu > 0.1 ? ` (machine not quiet: other processes ${pct(r.othersCpu)} of a core)` : '')
  const gw = rows.find(r => r.phase === 'throughput' && r.label === 'gateway' && !r.error)
  if (gw) {
    const done = gw.completedPerSec
    const met = gw.acceptedPerSec >= TARGETS.runsPerSec && done >= TARGETS.runsPerSec
    notes.push(`target ≥ ${int(TARGETS.runsPerSec)} runs/s on one core with persistence: gateway ${int(gw.acceptedPerSec)} runs/s accepted (202), ${int(done)} runs/s ended during the load: ${met ? 'met' : 'NOT met'}${flag(gw)}${busy(gw)}`)
  }
  for (const dl of rows.filter(r => r.phase === 'delivery' && r.label === 'gateway' && !r.error && r.deliveryMs?.n)) {
    notes.push(`target SSE delivery p99 ≤ ${TARGETS.deliveryP99Ms} ms (${dl.load} load: ${dl.loadPoint.concurrency} runs × ${dl.loadPoint.subscribers} streams): gateway run.completed stamp → client ${ms(dl.deliveryMs.p99)} ms p99 over ${dl.deliveryMs.n} deliveries (${int(dl.storedEventsPerSec)} events/s stored): ${dl.deliveryMs.p99 <= TARGETS.deliveryP99Ms ? 'met' : 'NOT met'}${flag(dl)}${busy(dl)}`)
  }
  const cp = rows.filter(r => r.phase === 'capacity' && r.label === 'gateway' && !r.error).at(-1)
  if (cp) {
    const l = cp.levelStats
    const met = l.level >= TARGETS.subscribers && l.alive >= TARGETS.subscribers && cp.rssBytes < TARGETS.rssBytes
    notes.push(`target ${int(TARGETS.subscribers)} concurrent subscribers under 1 GiB RSS: gateway held ${int(l.alive)} live of ${int(l.level)} at ${fmt.mib(cp.rssBytes)} RSS (${kib(cp.perSubscriberBytes)} per subscriber above the ${fmt.mib(cp.rssBeforeBytes)} without any): ${met ? 'met' : 'NOT met'}${l.level < TARGETS.subscribers ? ` (only ${l.level} tried)` : ''}${flag(cp)}`)
  }
  return notes
}

const status = r => (r.error ? 'FAILED' : r.problems?.length ? 'FLAGGED' : 'ok')
/** The closing columns of the throughput and delivery tables: memory, CPU of the server, the load and the rest, status. */
const resourceColumns = (loadTitle, loadCpu) => [
  { title: 'peak RSS', get: r => fmt.mib(r.peakRssBytes) },
  { title: 'srv CPU', get: r => pct(r.serverCpu) },
  { title: loadTitle, get: r => pct(loadCpu(r)) },
  { title: 'other CPU', get: r => pct(r.othersCpu) },
  { title: 'status', get: status, align: 'left' }
]

function phaseTables (rows, k, settings) {
  const out = []
  const t1 = rows.filter(r => r.phase === 'throughput')
  if (t1.length) {
    out.push(`throughput — wrk POST /runs:start {"message":"hello","mode":"echo"}, ${settings.connections} connections, ${settings.duration} s (+${settings.warmup} s warm-up, its runs drained first); "ended/s": runs whose ended_at falls in the measured window, from the server's LMDB\n` + table([
      { title: 'target', get: r => r.label, align: 'left' },
      { title: '202/s', get: r => int(r.acceptedPerSec) },
      { title: 'p50 ms', get: r => ms(r.latencyMs?.p50) },
      { title: 'p99 ms', get: r => ms(r.latencyMs?.p99) },
      { title: 'ended/s', get: r => int(r.completedPerSec) },
      { title: 'start→end p50/p99 ms', get: r => (r.completionLagMs?.n ? `${r.completionLagMs.p50}/${r.completionLagMs.p99}` : '-') },
      { title: 'backlog', get: r => int(r.backlogAtEnd) },
      { title: 'log B/req', get: r => (r.accessLog?.requests ? Math.round(r.accessLog.bytesPerLine) : '-') },
      ...resourceColumns('wrk CPU', r => r.wrkCpu)
    ], t1))
  }
  const t2 = rows.filter(r => r.phase === 'delivery')
  if (t2.length) {
    const s = k.sse
    out.push(`delivery — echo runs (steps ${s.steps}, delay_ms ${s.delayMs}) kept in flight × streams each ("load"), up to ${s.runs} runs or ${s.seconds} s (light load: ${Math.min(s.runs, 400)} runs or ${Math.min(s.seconds, 20)} s); latency = client receive time − the event's ended_at (run.completed, ms stamp: up to +1 ms); "step gap": time between two steps at a client (delay_ms + store + timer lateness)\n` + table([
      { title: 'target', get: r => r.label, align: 'left' },
      { title: 'load', get: r => (r.loadPoint ? `${r.loadPoint.concurrency}×${r.loadPoint.subscribers}` : '-') },
      { title: 'runs', get: r => int(r.client?.runsFinished) },
      { title: 'streams', get: r => int(r.client?.streams) },
      { title: 'events/s stored', get: r => int(r.storedEventsPerSec) },
      { title: 'p50 ms', get: r => ms(r.deliveryMs?.p50) },
      { title: 'p99 ms', get: r => ms(r.deliveryMs?.p99) },
      { title: 'max ms', get: r => ms(r.deliveryMs?.max) },
      { title: 'step gap p50/p99', get: r => (r.client?.latencyMs.stepGap.n ? `${ms(r.client.latencyMs.stepGap.p50)}/${ms(r.client.latencyMs.stepGap.p99)}` : '-') },
      { title: 'start p99 ms', get: r => ms(r.client?.latencyMs.start.p99) },
      ...resourceColumns('client CPU', r => r.clientCpu)
    ], t2))
  }
  const t3 = rows.filter(r => r.phase === 'capacity')
  if (t3.length) {
    const c = k.cap
    out.push(`capacity — ${c.runs} echo runs in flight (a step every ${c.delayMs} ms), streams opened round-robin ${c.batch} at a time up to each level, held ${c.holdMs} ms; RSS = server VmRSS (median of 5 reads); per sub = (RSS − RSS before any) / open streams; marginal = RSS growth / streams added since the previous level; alive = got a step during the hold\n` + table([
      { title: 'target', get: r => r.label, align: 'left' },
      { title: 'level', get: r => int(r.level) },
      { title: 'open', get: r => int(r.levelStats?.opened) },
      { title: 'alive', get: r => int(r.levelStats?.alive) },
      { title: 'closed', get: r => int(r.levelStats?.closed) },
      { title: 'connect s', get: r => (r.levelStats ? r.levelStats.connectSeconds.toFixed(1) : '-') },
      { title: 'RSS before', get: r => fmt.mib(r.rssBeforeBytes) },
      { title: 'RSS', get: r => fmt.mib(r.rssBytes) },
      { title: 'per sub', get: r => kib(r.perSubscriberBytes) },
      { title: 'marginal', get: r => kib(r.marginalPerSubscriberBytes) },
      { title: 'cancel → all ended', get: r => (r.cancel ? `${r.cancel.endedCleanly}/${r.cancel.streamsOpen} in ${r.cancel.lastEndMs === undefined ? '-' : (r.cancel.lastEndMs / 1000).toFixed(2)} s` : '') },
      { title: 'srv CPU', get: r => pct(r.serverCpu) },
      { title: 'client CPU', get: r => pct(r.clientCpu) },
      { title: 'status', get: status, align: 'left' }
    ], t3))
  }
  return out
}

export default {
  name: 'runs',
  description: 'run harness: POST /runs:start throughput with persistence, SSE delivery latency, concurrent subscribers and RSS',
  baseline: 'bare-uws',
  headline (settings) {
    const k = knobs()
    return `run harness (ROLES=${k.roles}), phases ${k.phases.join(', ')}: wrk for throughput, bench/baselines/runs-client.mjs for delivery and capacity`
  },

  async run (ctx) {
    const { settings, log } = ctx
    const k = knobs()
    const want = label => settings.targets.length === 0 || settings.targets.includes(label)
    const rows = []
    const notes = []
    const hard = hardNofile()

    if (k.phases.includes('throughput')) {
      const targets = [
        baselineTarget(k, 'bare-uws', 'bare'),
        baselineTarget(k, 'uws-lmdb-put', 'lmdb-put'),
        baselineTarget(k, 'uws-lmdb-run', 'lmdb-run'),
        gatewayTarget(k),
        gatewayTarget(k, { label: 'gateway-log-warn', logLevel: 'warn' })
      ]
      for (const t of targets) {
        if (interrupted()) break
        if (!want(t.label)) continue
        log(`runs / throughput / ${t.label}`)
        rows.push({ ...(await throughput(ctx, k, t)), baseline: t.kind === 'baseline' || undefined })
      }
    }
    if (k.phases.includes('delivery')) {
      const points = []
      if (k.light) points.push(['light', { ...k.sse, ...k.light, seconds: Math.min(k.sse.seconds, 20), runs: Math.min(k.sse.runs, 400) }])
      points.push(['full', k.sse])
      for (const [name, point] of points) {
        for (const t of [baselineTarget(k, 'uws-sse-memory', 'memory'), gatewayTarget(k)]) {
          if (interrupted()) break
          if (!want(t.label)) continue
          log(`runs / delivery (${point.concurrency} runs × ${point.subscribers} streams) / ${t.label}`)
          rows.push(await delivery(ctx, k, t, point, name))
        }
      }
    }
    if (k.phases.includes('capacity')) {
      for (const t of [baselineTarget(k, 'uws-sse-memory', 'memory'), gatewayTarget(k)]) {
        if (interrupted()) break
        if (!want(t.label)) continue
        log(`runs / capacity / ${t.label}`)
        rows.push(...await capacity(ctx, k, t, hard))
      }
    }

    // Notes per row: what limits it, the access log.
    for (const r of rows) {
      if (r.error) continue
      if (r.phase === 'throughput') {
        const b = boundNote(ctx, r, settings.connections)
        if (b) r.notes.push(b)
        if (r.accessLog?.requests) r.notes.push(`access log: ${int(r.accessLog.requests)} lines (${formatStatuses(r.accessLog.statuses)}), ${Math.round(r.accessLog.bytesPerLine)} B each, ${(r.accessLog.bytes / MiB).toFixed(1)} MiB in all`)
        if (r.drainMs > 1000) r.notes.push(`${int(r.backlogAtEnd)} accepted runs had not ended when the load stopped (the last ended ${(r.drainMs / 1000).toFixed(1)} s later): runs are accepted faster than they are executed`)
      }
    }
    const gw = rows.find(r => r.phase === 'throughput' && r.label === 'gateway' && !r.error)
    const quiet = rows.find(r => r.phase === 'throughput' && r.label === 'gateway-log-warn' && !r.error)
    if (gw && quiet && gw.acceptedPerSec) notes.push(`the access log's cost: gateway at info ${int(gw.acceptedPerSec)} runs/s, at warn (no request lines) ${int(quiet.acceptedPerSec)} runs/s (${((quiet.acceptedPerSec / gw.acceptedPerSec - 1) * 100).toFixed(0)}%)`)
    notes.push(...verdicts(rows))
    if (hard !== undefined) notes.push(`file descriptors: servers and the client start with ulimit -n ${Math.min(k.nofile, hard)} (asked ${k.nofile}, hard limit ${hard})`)
    notes.push(...phaseTables(rows, k, settings))

    const columns = [
      { title: 'phase', get: r => r.phase, align: 'left' },
      { title: 'target', get: r => r.label, align: 'left' },
      {
        title: 'result',
        align: 'left',
        get: r => {
          if (r.error) return '-'
          if (r.phase === 'throughput') return `${int(r.acceptedPerSec)} runs/s accepted` + (r.completedPerSec !== undefined ? `, ${int(r.completedPerSec)}/s ended` : '')
          if (r.phase === 'delivery') return `${r.loadPoint.concurrency}×${r.loadPoint.subscribers} streams: ${int(r.deliveryMs?.n)} deliveries, ${int(r.storedEventsPerSec)} events/s stored`
          return `${int(r.levelStats?.alive)}/${int(r.level)} streams alive, ${kib(r.perSubscriberBytes)}/sub`
        }
      },
      { title: 'p50 ms', get: r => ms(r.phase === 'throughput' ? r.latencyMs?.p50 : r.deliveryMs?.p50) },
      { title: 'p99 ms', get: r => ms(r.phase === 'throughput' ? r.latencyMs?.p99 : r.deliveryMs?.p99) },
      { title: 'RSS', get: r => fmt.mib(r.phase === 'capacity' ? r.rssBytes : r.peakRssBytes) },
      { title: 'srv CPU', get: r => pct(r.serverCpu) },
      { title: 'load CPU', get: r => pct(r.phase === 'throughput' ? r.wrkCpu : r.clientCpu) },
      { title: 'other CPU', get: r => pct(r.othersCpu) },
      { title: 'vs baseline', get: r => fmt.ratio(r.vsBaseline) },
      { title: 'status', get: status, align: 'left' }
    ]
    return { rows, columns, compareBy: 'reqPerSec', notes }
  }
}
