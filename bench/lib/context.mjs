// What a scenario gets: settings, targets started on the server CPU, wrk on
// the generator CPU, RSS/CPU sampling, and `measure`, the standard
// probe → warm-up → measured wrk run that the declarative form uses and a
// scenario's own run(ctx) may reuse.
import { join } from 'node:path'
import { mkdirSync } from 'node:fs'
import { runWrk } from './wrk.mjs'
import { sampleProcess, sampleWhile, othersCpu } from './sampler.mjs'
import { tempDir, removeTempDir } from './procs.mjs'
import { notQuiet } from './verdicts.mjs'

const nowUs = () => Number(process.hrtime.bigint() / 1000n)

export function createContext (scenario, settings, { log, warn }) {
  const tmpDir = tempDir(`bench-${scenario.name}-`)
  const servers = new Set()
  const profiles = []
  const ctx = {
    scenario,
    settings,
    tmpDir,
    serverCpu: settings.pin ? settings.serverCpu : undefined,
    wrkCpu: settings.pin ? settings.wrkCpu : undefined,
    log,
    warn,
    profiles,

    /** Node flags for a server process: --cpu-prof when BENCH_CPU_PROF asks for it. */
    nodeArgsFor (label) {
      if (!settings.cpuProf || !(settings.cpuProfTargets.length === 0 || settings.cpuProfTargets.includes(label))) return []
      const dir = join(settings.resultsDir, 'profiles', `${scenario.name}-${label}-${settings.stamp}`)
      mkdirSync(dir, { recursive: true })
      profiles.push({ label, dir, windows: [] })
      return ['--cpu-prof', `--cpu-prof-dir=${dir}`]
    },

    /** Starts a target; it is stopped by ctx.stop(server) or when the scenario ends. */
    async start (target) {
      log(`  starting ${target.label}`)
      const server = await target.start(ctx)
      servers.add(server)
      return server
    },

    async stop (server) {
      servers.delete(server)
      const exit = await server.stop()
      if (exit.code !== 0) warn(`${server.label} exited with ${exit.code ?? exit.signal} on SIGTERM\n${server.errTail?.() ?? ''}`)
      return exit
    },

    async stopAll () {
      for (const server of [...servers]) await ctx.stop(server).catch(() => {})
      removeTempDir(tmpDir)
    },

    /**
     * Starts `target`, runs `fn(server)`, flags `row` when the server died
     * meanwhile, stops it, then calls `afterStop(server)` (servers flush their
     * logs on shutdown: read them there). A failure becomes the row's error;
     * the server is stopped in every case. Resolves to `row`.
     */
    async withServer (target, row, fn, afterStop) {
      let server
      try {
        server = await ctx.start(target)
        await fn(server)
        if (!server.alive()) row.problems.push(`server died during the run (code ${server.child.exitCode}, signal ${server.child.signalCode})`)
        const stopped = server
        server = undefined
        await ctx.stop(stopped)
        afterStop?.(stopped)
      } catch (err) {
        warn(`${target.label}: ${err.message}`)
        row.error = err.message
        row.problems.push(err.message)
      } finally {
        if (server) await ctx.stop(server).catch(err => warn(`${target.label}: stop failed: ${err.message}`))
      }
      return row
    },

    /** Raw wrk run with the settings' defaults; `opts` may override any. */
    wrk (opts) {
      return runWrk({
        duration: settings.duration,
        connections: settings.connections,
        threads: settings.threads,
        timeoutSeconds: settings.wrkTimeout,
        cpu: ctx.wrkCpu,
        dir: tmpDir,
        ...opts
      })
    },

    /** sampleProcess from sampler.mjs: peak RSS and CPU of a pid until stop(). */
    sample: sampleProcess,

    /** One request with fetch: does the server answer it as expected before we load it? */
    async probe (server, request) {
      const headers = { ...(request.headers ?? {}) }
      let body = request.body
      if (body !== undefined && typeof body === 'object' && !Buffer.isBuffer(body)) {
        body = JSON.stringify(body)
        if (!Object.keys(headers).some(h => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json'
      }
      try {
        const res = await fetch(new URL(request.path ?? '/', server.url), {
          method: request.method ?? 'GET', headers, body, signal: AbortSignal.timeout(5000)
        })
        const text = await res.text()
        return { status: res.status, contentType: res.headers.get('content-type') ?? undefined, body: text.slice(0, 300) }
      } catch (err) {
        return { error: err.message }
      }
    },

    /**
     * probe, warm-up (settings.warmup s, figures discarded), then the
     * measured run (settings.duration s) with the server's RSS and CPU and
     * wrk's CPU sampled. Resolves to a result row; `problems` lists whatever
     * makes the figures untrustworthy (non-2xx, socket errors, a failed probe)
     * and the table flags such rows.
     *
     * opts: `warmup` / `duration` seconds, `wrk` (overrides for both wrk runs,
     * e.g. { connections }), `companions` ([{ label, pid }]: processes the
     * server depends on, e.g. a broker, whose CPU is reported in
     * `companionCpu[label]` instead of counting as other processes').
     */
    async measure (server, request, opts = {}) {
      const expect = request.expectStatus ?? (s => s >= 200 && s < 300)
      const problems = []
      const notes = []
      const probe = await ctx.probe(server, request)
      if (probe.error) problems.push(`probe request failed: ${probe.error}`)
      else if (!expect(probe.status)) problems.push(`probe got HTTP ${probe.status}: ${probe.body}`)

      const warmupSeconds = opts.warmup ?? settings.warmup
      let warmup
      if (warmupSeconds > 0) {
        log(`  ${server.label}: warm-up ${warmupSeconds} s`)
        const w = await ctx.wrk({ url: server.url, request, duration: warmupSeconds, ...opts.wrk })
        warmup = { seconds: warmupSeconds, reqPerSec: w.reqPerSec, non2xx3xx: w.non2xx3xx, socketErrors: w.socketErrors }
      }

      const duration = opts.duration ?? settings.duration
      log(`  ${server.label}: measuring ${duration} s`)
      const companions = (opts.companions ?? []).filter(c => c.pid)
      const windowStartUs = nowUs()
      let wrkPid
      const { value: w, proc: s, system: sys } = await sampleWhile(server.pid, companions, watch =>
        ctx.wrk({ url: server.url, request, duration, ...opts.wrk, onStart: pid => { wrkPid = pid; watch(pid) } }))
      for (const p of profiles) if (p.label === server.label) p.windows.push({ startUs: windowStartUs, endUs: nowUs() })

      if (w.non2xx3xx > 0) problems.push(`${w.non2xx3xx} non-2xx/3xx responses (${(100 * w.non2xx3xx / Math.max(1, w.requests)).toFixed(1)}% of ${w.requests})`)
      if (w.socketErrorCount > 0) {
        const e = w.socketErrors
        problems.push(`socket errors: connect ${e.connect}, read ${e.read}, write ${e.write}, timeout ${e.timeout}`)
      }
      const wrkCpu = wrkPid === undefined ? undefined : s.otherCpuFraction[wrkPid]
      const companionCpu = Object.fromEntries(companions.map(c => [c.label, s.otherCpuFraction[c.pid]]))
      // CPU that neither the server, wrk, the runner nor a companion used: other processes competing.
      const others = s.cpuFraction === undefined ? undefined : othersCpu(sys, s.cpuFraction, wrkCpu, ...Object.values(companionCpu))
      if (others > settings.busyThreshold) {
        const serverCore = ctx.serverCpu !== undefined && sys.perCpuBusy[ctx.serverCpu] !== undefined
          ? ` (server's CPU${ctx.serverCpu} ${Math.round(sys.perCpuBusy[ctx.serverCpu] * 100)}% busy, server itself ${Math.round(s.cpuFraction * 100)}%)`
          : ''
        notes.push(notQuiet(others, ` during the run${serverCore}`))
      }
      if (wrkCpu !== undefined && s.cpuFraction !== undefined && wrkCpu > 0.9 && s.cpuFraction < 0.9) {
        notes.push(`wrk used ${Math.round(wrkCpu * 100)}% of its core and the server ${Math.round(s.cpuFraction * 100)}%: the generator, not the server, may be the limit`)
      }

      return {
        label: server.label,
        reqPerSec: w.reqPerSec,
        requests: w.requests,
        durationSeconds: w.durationSeconds,
        latencyMs: w.latency,
        bytesRead: w.bytesRead,
        non2xx3xx: w.non2xx3xx,
        socketErrors: w.socketErrors,
        peakRssBytes: s.peakRssBytes,
        peakRssSource: s.peakRssSource,
        endRssBytes: s.endRssBytes,
        serverCpu: s.cpuFraction,
        serverCpuSeconds: s.cpuSeconds,
        wrkCpu,
        companionCpu: companions.length ? companionCpu : undefined,
        othersCpu: others,
        system: sys,
        probe,
        warmup,
        wrk: { command: w.command, output: w.raw, stderr: w.stderr },
        problems,
        notes
      }
    }
  }
  return ctx
}

/** The declarative form: each target in turn, never two at once. */
export async function runDeclarative (scenario, ctx) {
  const rows = []
  for (const target of scenario.targets) {
    if (ctx.settings.targets.length > 0 && !ctx.settings.targets.includes(target.label)) continue
    ctx.log(`${scenario.name} / ${target.label}`)
    const row = { label: target.label, baseline: target.kind === 'baseline' || undefined, problems: [], notes: [] }
    rows.push(await ctx.withServer(target, row, async server => {
      const spec = target.request ?? scenario.request
      const request = typeof spec === 'function' ? await spec(server, ctx) : spec
      const m = await ctx.measure(server, request)
      Object.assign(row, m, { label: row.label, problems: [...row.problems, ...m.problems] })
    }))
  }
  return { rows }
}
