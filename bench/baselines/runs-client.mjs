// Load generator of the `runs` scenario (not a baseline: it lives here beside
// the scenario's baselines). One process, pinned by the scenario to the load
// CPU. Starts runs with POST /runs:start (node:http, keep-alive) and reads
// their event streams over raw `net` sockets (HTTP/1.1 by hand, chunked
// transfer decoding, SSE parsing): a few hundred bytes of JS state per
// subscriber, so ten thousand of them fit in one process.
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
import net from 'node:net'
import http from 'node:http'
import { readFileSync } from 'node:fs'
import { StringDecoder } from 'node:string_decoder'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'

const cfg = JSON.parse(process.argv[2] ?? '{}')
const host = cfg.host ?? '127.0.0.1'
const port = cfg.port
if (!port) throw new Error('runs-client: missing port')
const log = line => process.stderr.write(`runs-client: ${line}\n`)
const now = () => performance.timeOrigin + performance.now()

// --- control requests ----------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })

/** Resolves (never rejects) to { status, body, ms, error }. */
function call (method, path, body) {
  const t0 = now()
  return new Promise(resolve => {
    const data = body === undefined ? undefined : JSON.stringify(body)
    const req = http.request({ host, port, method, path, agent, headers: data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}, timeout: 15000 }, res => {
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

// --- one SSE subscriber on a raw socket ----------------------------------------

const CRLF2 = Buffer.from('\r\n\r\n')
const CRLF = Buffer.from('\r\n')

/**
 * GET /runs/{id}/stream on its own connection. Calls onOpen(t) at the
 * `: stream open` comment, onEvent(ev, t) per event, onEnd() at the end of
 * the chunked body or when the socket closes (`ended` tells which).
 */
class Subscriber {
  constructor (runId, { onOpen, onEvent, onEnd } = {}) {
    this.runId = runId
    this.onOpen = onOpen
    this.onEvent = onEvent
    this.onEndCb = onEnd
    this.state = 'head'
    this.pending = Buffer.alloc(0)
    this.chunkLeft = 0
    this.decoder = new StringDecoder('utf8')
    this.text = ''
    this.status = undefined
    this.openAt = undefined
    this.ended = false // the server ended the body (chunk of size 0)
    this.closed = false
    this.error = undefined
    this.events = 0
    this.steps = 0
    this.sentAt = now()
    const s = this.socket = net.connect({ host, port })
    s.setNoDelay(true)
    s.on('connect', () => {
      this.sentAt = now()
      s.write(`GET /runs/${encodeURIComponent(runId)}/stream HTTP/1.1\r\nHost: ${host}:${port}\r\nAccept: text/event-stream\r\n\r\n`)
    })
    s.on('data', buf => this.feed(buf, now()))
    s.on('error', err => { this.error ??= err.code ?? err.message })
    s.on('close', () => { this.closed = true; this.finish() })
  }

  finish () {
    if (this.done) return
    this.done = true
    this.onEndCb?.(this)
  }

  close () {
    this.socket.destroy()
  }

  feed (buf, t) {
    this.pending = this.pending.length ? Buffer.concat([this.pending, buf]) : buf
    for (;;) {
      if (this.state === 'head') {
        const i = this.pending.indexOf(CRLF2)
        if (i < 0) return
        const head = this.pending.subarray(0, i).toString('latin1')
        this.pending = this.pending.subarray(i + 4)
        this.status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1])
        const chunked = /\r\ntransfer-encoding:\s*chunked/i.test(head)
        if (this.status !== 200 || !chunked) {
          this.error ??= this.status !== 200 ? `HTTP ${this.status}` : 'not chunked'
          this.state = 'dead'
          this.socket.destroy()
          return
        }
        this.state = 'size'
      } else if (this.state === 'size') {
        const i = this.pending.indexOf(CRLF)
        if (i < 0) return
        const size = parseInt(this.pending.subarray(0, i).toString('latin1'), 16)
        this.pending = this.pending.subarray(i + 2)
        if (size === 0) {
          this.ended = true
          this.state = 'dead'
          this.socket.destroy() // uWS keeps the connection alive after the body
          return
        }
        this.chunkLeft = size
        this.state = 'data'
      } else if (this.state === 'data') {
        if (this.pending.length < this.chunkLeft + 2) {
          // Hand over what is there (minus a possible partial CRLF) to keep the buffer small.
          const n = Math.min(this.pending.length, this.chunkLeft)
          if (n > 0 && n === this.pending.length) {
            this.sse(this.decoder.write(this.pending), t)
            this.chunkLeft -= n
            this.pending = Buffer.alloc(0)
          }
          return
        }
        this.sse(this.decoder.write(this.pending.subarray(0, this.chunkLeft)), t)
        this.pending = this.pending.subarray(this.chunkLeft + 2)
        this.chunkLeft = 0
        this.state = 'size'
      } else {
        return
      }
    }
  }

  sse (text, t) {
    this.text += text
    let i
    while ((i = this.text.indexOf('\n\n')) >= 0) {
      const block = this.text.slice(0, i)
      this.text = this.text.slice(i + 2)
      let id, event, data
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          if (line.startsWith(': stream open') && this.openAt === undefined) { this.openAt = t; this.onOpen?.(this, t) }
          continue
        }
        const c = line.indexOf(':')
        const field = c < 0 ? line : line.slice(0, c)
        const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '')
        if (field === 'id') id = Number(value)
        else if (field === 'event') event = value
        else if (field === 'data') data = data === undefined ? value : `${data}\n${value}`
      }
      if (event !== undefined || data !== undefined) {
        this.events++
        if (event === 'echo.step') this.steps++
        this.onEvent?.(this, { id, event: event ?? 'message', data }, t)
      }
    }
  }
}

// --- figures ---------------------------------------------------------------------

function stats (values) {
  const v = [...values].sort((a, b) => a - b)
  const q = p => (v.length ? v[Math.min(v.length - 1, Math.max(0, Math.ceil(p / 100 * v.length) - 1))] : undefined)
  const r = x => (x === undefined ? undefined : Math.round(x * 1000) / 1000)
  return { n: v.length, p50: r(q(50)), p90: r(q(90)), p99: r(q(99)), p999: r(q(99.9)), max: r(v.at(-1)), avg: r(v.length ? v.reduce((a, b) => a + b, 0) / v.length : undefined) }
}

function rssOf (pid) {
  try { return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024 } catch { return undefined }
}
async function medianRss (pid) {
  const xs = []
  for (let i = 0; i < 5; i++) { const r = rssOf(pid); if (r !== undefined) xs.push(r); await sleep(100) }
  xs.sort((a, b) => a - b)
  return xs[Math.floor(xs.length / 2)]
}

async function pool (items, n, fn) {
  let i = 0
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => { while (i < items.length) { const k = i++; await fn(items[k], k) } }))
}

const loop = monitorEventLoopDelay({ resolution: 1 })

/** Millions of samples without a growing array: 0.05 ms buckets up to 2 s, the rest in the last one. */
class Histogram {
  constructor (bucketMs = 0.05, maxMs = 2000) {
    this.bucketMs = bucketMs
    this.counts = new Float64Array(Math.ceil(maxMs / bucketMs) + 1)
    this.n = 0
    this.sum = 0
    this.max = 0
  }

  push (v) {
    this.counts[Math.min(this.counts.length - 1, Math.max(0, Math.floor(v / this.bucketMs)))]++
    this.n++
    this.sum += v
    if (v > this.max) this.max = v
  }

  stats () {
    const q = p => {
      if (!this.n) return undefined
      const want = Math.max(1, Math.ceil(p / 100 * this.n))
      let seen = 0
      for (let i = 0; i < this.counts.length; i++) {
        seen += this.counts[i]
        if (seen >= want) return Math.round((i + 0.5) * this.bucketMs * 1000) / 1000
      }
      return this.max
    }
    const r = x => (x === undefined ? undefined : Math.round(x * 1000) / 1000)
    return { n: this.n, p50: q(50), p90: q(90), p99: q(99), p999: q(99.9), max: r(this.n ? this.max : undefined), avg: r(this.n ? this.sum / this.n : undefined) }
  }
}

// --- delivery ---------------------------------------------------------------------

async function delivery () {
  const { concurrency = 50, subscribers = 4, steps = 200, delayMs = 5, message = 'hello' } = cfg
  const maxRuns = cfg.runs ?? 2000
  const deadline = now() + (cfg.seconds ?? 60) * 1000
  const expectedIds = steps + 3
  const perRunTimeoutMs = cfg.runTimeoutMs ?? Math.max(30000, steps * delayMs * 5)
  const lat = { running: [], succeeded: [], runningReplayed: [], startMs: [], stepGapMs: new Histogram() }
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
          } else if (ev.event === 'run.started' || ev.event === 'run.completed') {
            let d
            try { d = JSON.parse(ev.data) } catch {}
            const stamp = Date.parse(ev.event === 'run.started' ? d?.data?.run?.started_at : d?.data?.run?.ended_at)
            if (Number.isFinite(stamp)) {
              const ms = t - stamp
              // Live: stamped after this stream's open comment arrived (1 ms stamps: a margin of 1).
              const live = s.openAt !== undefined && stamp > s.openAt + 1
              if (ev.event === 'run.started') (live ? lat.running : lat.runningReplayed).push(ms)
              else if (live) lat.succeeded.push(ms)
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
      stepGap: lat.stepGapMs.stats()
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
    const r = await call('POST', `/runs/${id}/cancel`)
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
