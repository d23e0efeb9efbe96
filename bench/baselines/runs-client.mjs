// Load generator of the `runs` scenario (not a baseline: it lives here beside
// the scenario's baselines). One process, pinned by the scenario to the load
// CPU. Starts runs with POST /runs:start (node:http, keep-alive) and reads
// their event streams over raw sockets (bench/lib/sse-subscriber.mjs): a few
// hundred bytes of JS state per subscriber, so ten thousand of them fit in
// one process.
//
// Usage: node runs-client.mjs '<json>'; `mode` is one of
//
//   delivery  { host, port, concurrency, subscribers, steps, delayMs, runs,
//               seconds, message }: keeps `concurrency` echo runs in flight
//               (options { steps, delay_ms }), each read by `subscribers`
//               streams opened right after its 202; a new run starts when all
//               streams of one have ended, until `runs` runs or `seconds`
//               have passed. Per stream: every id from 1 to steps + 3 once,
//               in order, ending with run.completed and the end of the body.
//               Latency of a transition = receive time (this process's
//               performance.timeOrigin + performance.now()) − the server's
//               stamp in the event's record (data.run: started_at for
//               run.started, ended_at for run.completed). Only events stamped after this stream's
//               `: stream open` comment arrived are counted as live
//               deliveries (the subscription existed before the transition);
//               the others were replayed (or raced the subscription).
//               Every live step is timed too, by its `created_at` (stamped
//               when the mode emits it, before it is stored), and `live`
//               pools the steps and run.completed: 200 samples a stream
//               rather than one, so its p99 is not the third-worst of a few
//               hundred.
//   capacity  { host, port, levels: [n...], runs, delayMs, holdMs, batch,
//               gatewayPid, connectTimeoutMs, endTimeoutMs }: starts `runs`
//               echo runs (1000 steps, `delayMs` apart), then opens streams
//               round-robin over them up to each level in turn (`batch` at a
//               time, each waiting for its `: stream open`), holds `holdMs`
//               and reads the server's VmRSS (/proc/<gatewayPid>/status,
//               median of 5 reads 100 ms apart); a stream is alive when it
//               received a step during the hold. At the end cancels every run
//               (POST /runs/{id}/cancel) and times until every stream got
//               run.failed with reason cancelled, and its end.
//
// Prints one JSON line on stdout; progress on stderr. Exits 0 unless it could
// not run at all.
import http from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { Subscriber as RawSubscriber, now } from '../lib/sse-subscriber.mjs'
import { Histogram, summarize as stats, median } from '../lib/stats.mjs'
import { memory } from '../lib/sampler.mjs'

const cfg = JSON.parse(process.argv[2] ?? '{}')
const host = cfg.host ?? '127.0.0.1'
const port = cfg.port
if (!port) throw new Error('runs-client: missing port')
const log = line => process.stderr.write(`runs-client: ${line}\n`)

// --- control requests ----------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })

/** Resolves (never rejects) to { status, body, ms, error }. */
/** `jsonType`: an empty body declared JSON, as the gateway asks of a cancel (415 without it). */
function call (method, path, body, { jsonType = false } = {}) {
  const t0 = now()
  return new Promise(resolve => {
    const data = body === undefined ? undefined : JSON.stringify(body)
    const headers = data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : jsonType ? { 'content-type': 'application/json' } : {}
    const req = http.request({ host, port, method, path, agent, headers, timeout: 15000 }, res => {
      let text = ''
      res.setEncoding('utf8').on('data', d => { text += d }).on('end', () => {
        let json
        try { json = JSON.parse(text) } catch {}
        resolve({ status: res.statusCode, body: json ?? text, ms: now() - t0 })
      })
    })
    req.on('timeout', () => req.destroy(new Error('timeout')))
    req.on('error', err => resolve({ error: err.code ?? err.message, ms: now() - t0 }))
    req.end(data)
  })
}

/** A stream of run `runId` on this client's server. */
class Subscriber extends RawSubscriber {
  constructor (runId, callbacks) { super(runId, { host, port, ...callbacks }) }
}

// --- figures ---------------------------------------------------------------------

async function medianRss (pid) {
  const xs = []
  for (let i = 0; i < 5; i++) { const r = memory(pid)?.rss; if (r !== undefined) xs.push(r); await sleep(100) }
  return median(xs)
}

async function pool (items, n, fn) {
  let i = 0
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => { while (i < items.length) { const k = i++; await fn(items[k], k) } }))
}

const loop = monitorEventLoopDelay({ resolution: 1 })

// --- delivery ---------------------------------------------------------------------

const CREATED_AT = '"created_at":"'

/** The ms stamp of an event's `created_at`, its last field (NaN when absent): found, not parsed, once per step. */
function createdAt (json) {
  const at = json.lastIndexOf(CREATED_AT)
  return at < 0 ? NaN : Date.parse(json.slice(at + CREATED_AT.length, json.indexOf('"', at + CREATED_AT.length)))
}

async function delivery () {
  const { concurrency = 50, subscribers = 4, steps = 200, delayMs = 5, message = 'hello' } = cfg
  const maxRuns = cfg.runs ?? 2000
  const deadline = now() + (cfg.seconds ?? 60) * 1000
  const expectedIds = steps + 3
  const perRunTimeoutMs = cfg.runTimeoutMs ?? Math.max(30000, steps * delayMs * 5)
  const lat = { running: [], succeeded: [], runningReplayed: [], startMs: [], stepGapMs: new Histogram(), steps: new Histogram(), live: new Histogram() }
  const problems = { startErrors: {}, streamErrors: {}, incomplete: 0, wrongOrder: 0, notSucceeded: 0, overflow: 0, timeouts: 0, examples: [] }
  let started = 0
  let finished = 0
  let streams = 0
  let events = 0
  const bump = (o, k) => { o[k] = (o[k] ?? 0) + 1 }
  const t0 = now()
  loop.enable()

  const one = async () => {
    const tStart = now()
    const r = await call('POST', '/runs:start', { message, mode: 'echo', options: { steps, delay_ms: delayMs } })
    if (r.status !== 202 || typeof r.body?.run_id !== 'string') {
      bump(problems.startErrors, r.error ?? `HTTP ${r.status}`)
      if (problems.examples.length < 5) problems.examples.push(`start: ${r.error ?? `HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`}`)
      await sleep(100)
      return
    }
    lat.startMs.push(now() - tStart)
    const runId = r.body.run_id
    const subs = await Promise.all(Array.from({ length: subscribers }, () => new Promise(resolve => {
      const seen = []
      let lastStepAt
      let terminal
      const timer = setTimeout(() => { sub.timedOut = true; sub.close() }, perRunTimeoutMs)
      const sub = new Subscriber(runId, {
        onEvent: (s, ev, t) => {
          seen.push(ev.id)
          if (ev.event === 'echo.step') {
            // Both steps arrived after the stream opened (not replayed with it).
            if (s.openAt !== undefined && lastStepAt !== undefined && lastStepAt > s.openAt + 0.5) lat.stepGapMs.push(t - lastStepAt)
            lastStepAt = t
            const stamp = createdAt(ev.data)
            if (s.openAt !== undefined && stamp > s.openAt + 1) {
              lat.steps.push(t - stamp)
              lat.live.push(t - stamp)
            }
          } else if (ev.event === 'run.started' || ev.event === 'run.completed') {
            let d
            try { d = JSON.parse(ev.data) } catch {}
            const stamp = Date.parse(ev.event === 'run.started' ? d?.data?.run?.started_at : d?.data?.run?.ended_at)
            if (Number.isFinite(stamp)) {
              const ms = t - stamp
              // Live: stamped after this stream's open comment arrived (1 ms stamps: a margin of 1).
              const live = s.openAt !== undefined && stamp > s.openAt + 1
              if (ev.event === 'run.started') (live ? lat.running : lat.runningReplayed).push(ms)
              else if (live) {
                lat.succeeded.push(ms)
                lat.live.push(ms)
              }
            }
            if (ev.event === 'run.completed') terminal = ev.event
          } else if (ev.event === 'error') {
            problems.overflow++
          } else if (ev.event.startsWith('run.')) {
            terminal = ev.event
          }
        },
        onEnd: s => {
          clearTimeout(timer)
          resolve({ s, seen, terminal })
        }
      })
    })))
    for (const { s, seen, terminal } of subs) {
      streams++
      events += s.events
      const inOrder = seen.every((id, i) => id === i + 1)
      if (s.timedOut) problems.timeouts++
      if (s.error && !s.ended) bump(problems.streamErrors, s.error)
      if (!inOrder) problems.wrongOrder++
      if (seen.length !== expectedIds || !s.ended) problems.incomplete++
      if (terminal !== 'run.completed') problems.notSucceeded++
      if ((!inOrder || seen.length !== expectedIds || !s.ended || terminal !== 'run.completed') && problems.examples.length < 5) {
        problems.examples.push(`${runId}: ${seen.length} events (expected ${expectedIds})${inOrder ? '' : ', out of order'}, last ${terminal ?? 'none'}, ${s.ended ? 'ended' : `not ended${s.error ? ` (${s.error})` : ''}${s.timedOut ? ' (timed out)' : ''}`}`)
      }
    }
    finished++
  }

  let lastLog = now()
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (started < maxRuns && now() < deadline) {
      started++
      await one()
      if (now() - lastLog > 5000) { lastLog = now(); log(`delivery: ${finished} runs done, ${lat.succeeded.length} live run.completed samples`) }
    }
  }))
  loop.disable()
  const seconds = (now() - t0) / 1000
  const cpu = process.cpuUsage()
  return {
    mode: 'delivery',
    config: { concurrency, subscribers, steps, delayMs, runs: maxRuns, seconds: cfg.seconds },
    seconds,
    runsStarted: started,
    runsFinished: finished,
    streams,
    events,
    eventsPerSec: events / seconds,
    // Events the server stored (and fanned out): steps + 4 per run, over the phase.
    storedEventsPerSec: finished * (steps + 4) / seconds,
    latencyMs: {
      succeeded: stats(lat.succeeded),
      running: stats(lat.running),
      runningReplayed: stats(lat.runningReplayed),
      start: stats(lat.startMs),
      stepGap: lat.stepGapMs.stats(),
      steps: lat.steps.stats(),
      live: lat.live.stats()
    },
    problems,
    clientCpuSeconds: (cpu.user + cpu.system) / 1e6,
    clientMaxRssBytes: process.resourceUsage().maxRSS * 1024,
    clientLoopDelayMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 }
  }
}

// --- capacity ---------------------------------------------------------------------

async function capacity () {
  const levels = cfg.levels ?? [1000, 5000, 10000]
  const nRuns = cfg.runs ?? 100
  const delayMs = cfg.delayMs ?? 1000
  const holdMs = cfg.holdMs ?? 5000
  const batch = cfg.batch ?? 250
  const connectTimeoutMs = cfg.connectTimeoutMs ?? 15000
  const pid = cfg.gatewayPid
  const t0 = now()
  const out = { mode: 'capacity', config: { levels, runs: nRuns, delayMs, holdMs, batch }, levels: [], problems: { startErrors: {}, examples: [] } }

  // The runs the subscribers follow: 1000 steps (echo's maximum), `delayMs` apart.
  const runIds = []
  await pool(Array.from({ length: nRuns }), 8, async () => {
    const r = await call('POST', '/runs:start', { message: 'hello', mode: 'echo', options: { steps: 1000, delay_ms: delayMs } })
    if (r.status === 202 && typeof r.body?.run_id === 'string') runIds.push(r.body.run_id)
    else {
      out.problems.startErrors[r.error ?? `HTTP ${r.status}`] = (out.problems.startErrors[r.error ?? `HTTP ${r.status}`] ?? 0) + 1
      if (out.problems.examples.length < 5) out.problems.examples.push(`start: ${r.error ?? `HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`}`)
    }
  })
  out.runsStarted = runIds.length
  if (runIds.length === 0) throw new Error('runs-client: no run started')
  await sleep(Math.max(1500, delayMs + 500))
  out.rssBeforeBytes = await medianRss(pid)
  log(`capacity: ${runIds.length} runs in flight, server RSS ${(out.rssBeforeBytes / 2 ** 20).toFixed(1)} MiB before any subscriber`)

  const subs = []
  const terminalSeen = new Set()
  const newSub = i => new Promise(resolve => {
    const timer = setTimeout(() => resolve(sub), connectTimeoutMs)
    const sub = new Subscriber(runIds[i % runIds.length], {
      onOpen: () => { clearTimeout(timer); resolve(sub) },
      onEvent: (s, ev) => {
        if (ev.event !== 'run.completed' && ev.event !== 'run.failed') return
        s.terminal = ev.event === 'run.failed' && ev.data.includes('"reason":"cancelled"') ? 'cancelled' : ev.event
        terminalSeen.add(s)
      },
      onEnd: s => { clearTimeout(timer); s.endedAt = now(); resolve(s) }
    })
    subs.push(sub)
  })

  for (const level of levels) {
    const tLevel = now()
    const before = subs.length
    while (subs.length < level) {
      const n = Math.min(batch, level - subs.length)
      const base = subs.length
      await Promise.all(Array.from({ length: n }, (_, k) => newSub(base + k)))
    }
    const connectSeconds = (now() - tLevel) / 1000
    const opened = subs.filter(s => s.openAt !== undefined).length
    const errors = {}
    for (const s of subs) if (s.error) errors[s.error] = (errors[s.error] ?? 0) + 1
    log(`capacity: ${level} streams requested (${subs.length - before} new in ${connectSeconds.toFixed(1)} s), ${opened} open; holding ${holdMs} ms`)
    const stepsBefore = subs.map(s => s.steps)
    await sleep(holdMs)
    const rss = await medianRss(pid)
    const alive = subs.filter((s, i) => !s.closed && s.steps > stepsBefore[i]).length
    const closed = subs.filter(s => s.closed).length
    out.levels.push({
      level,
      requested: subs.length,
      opened,
      connected: subs.filter(s => !s.closed).length,
      alive,
      closed,
      errors,
      connectSeconds,
      rssBytes: rss,
      perSubscriberBytes: opened ? (rss - out.rssBeforeBytes) / opened : undefined,
      clientRssBytes: process.memoryUsage().rss
    })
    log(`capacity: ${level}: ${alive} alive, ${closed} closed, server RSS ${(rss / 2 ** 20).toFixed(1)} MiB`)
  }

  // Cancel every run: each stream should get run.failed (reason cancelled) and its end.
  const wasOpen = subs.filter(s => !s.closed)
  const tCancel = now()
  const cancels = { ok: 0, other: {} }
  await pool(runIds, 8, async id => {
    const r = await call('POST', `/runs/${id}/cancel`, undefined, { jsonType: true })
    if (r.status === 200) cancels.ok++
    else cancels.other[r.error ?? `HTTP ${r.status}`] = (cancels.other[r.error ?? `HTTP ${r.status}`] ?? 0) + 1
  })
  const endDeadline = now() + (cfg.endTimeoutMs ?? 30000)
  while (now() < endDeadline && wasOpen.some(s => !s.closed)) await sleep(50)
  const ends = wasOpen.filter(s => s.endedAt !== undefined).map(s => s.endedAt - tCancel)
  out.cancel = {
    runs: runIds.length,
    cancelled: cancels.ok,
    cancelErrors: cancels.other,
    streamsOpen: wasOpen.length,
    gotTerminal: wasOpen.filter(s => s.terminal === 'cancelled').length,
    endedCleanly: wasOpen.filter(s => s.ended).length,
    stillOpen: wasOpen.filter(s => !s.closed).length,
    lastEndMs: ends.length ? Math.max(...ends) : undefined
  }
  for (const s of subs) s.close()
  out.seconds = (now() - t0) / 1000
  const cpu = process.cpuUsage()
  out.clientCpuSeconds = (cpu.user + cpu.system) / 1e6
  out.clientMaxRssBytes = process.resourceUsage().maxRSS * 1024
  return out
}

const result = cfg.mode === 'capacity' ? await capacity() : await delivery()
agent.destroy()
process.stdout.write(JSON.stringify(result) + '\n')
process.exit(0)
