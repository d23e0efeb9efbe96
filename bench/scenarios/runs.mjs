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
//               the full one (50 × 4). Rows:
//                 uws-sse-memory    runs-uws.mjs MODE=memory: the same SSE, nothing persisted
//                 uws-sse-lmdb      MODE=lmdb-sse: + each event committed to LMDB before it is
//                                   streamed, the design's rule and nothing else of the gateway
//                 gateway
//   capacity    the same client opens streams on in-flight runs up to each
//               level (1,000, 5,000, 10,000) and reads the server's VmRSS;
//               then cancels the runs and times the end of every stream.
//               Rows: uws-sse-memory, gateway.
//
// Servers on the server CPU, wrk / the client / the LMDB reader on the load
// CPU; every server and client started through `sh -c 'ulimit -n ...'`.
// The phases are in runs/: knobs and targets, throughput, the client's two
// phases, and the tables.
import { hardNofile, interrupted } from '../lib/procs.mjs'
import { knobs, gatewayTarget, baselineTarget } from './runs/knobs.mjs'
import { throughput } from './runs/throughput.mjs'
import { delivery, capacity } from './runs/client.mjs'
import { throughputNotes, verdicts, phaseTables, figures, SUMMARY_COLUMNS } from './runs/tables.mjs'

export default {
  name: 'runs',
  description: 'run harness: POST /runs:start throughput with persistence, SSE delivery latency, concurrent subscribers and RSS',
  baseline: 'bare-uws',
  figures,
  headline () {
    const k = knobs()
    return `run harness (ROLES=${k.roles}), phases ${k.phases.join(', ')}: wrk for throughput, bench/baselines/runs-client.mjs for delivery and capacity`
  },

  async run (ctx) {
    const { settings, log } = ctx
    const k = knobs()
    const rows = []
    const hard = hardNofile()
    // Each target of a phase in turn, never two at once.
    const each = async (phase, targets, measure) => {
      for (const t of targets) {
        if (interrupted()) break
        if (settings.targets.length > 0 && !settings.targets.includes(t.label)) continue
        log(`runs / ${phase} / ${t.label}`)
        rows.push(...[await measure(t)].flat())
      }
    }
    const sseTargets = () => [baselineTarget(k, 'uws-sse-memory', 'memory'), baselineTarget(k, 'uws-sse-lmdb', 'lmdb-sse'), gatewayTarget(k)]

    if (k.phases.includes('throughput')) {
      await each('throughput', [
        baselineTarget(k, 'bare-uws', 'bare'),
        baselineTarget(k, 'uws-lmdb-put', 'lmdb-put'),
        baselineTarget(k, 'uws-lmdb-run', 'lmdb-run'),
        gatewayTarget(k),
        gatewayTarget(k, { label: 'gateway-log-warn', logLevel: 'warn' })
      ], t => throughput(ctx, k, t))
    }
    if (k.phases.includes('delivery')) {
      const points = []
      if (k.light) points.push(['light', { ...k.sse, ...k.light, seconds: Math.min(k.sse.seconds, 20), runs: Math.min(k.sse.runs, 400) }])
      points.push(['full', k.sse])
      for (const [name, point] of points) {
        await each(`delivery (${point.concurrency} runs × ${point.subscribers} streams)`, sseTargets(), t => delivery(ctx, k, t, point, name))
      }
    }
    // Streams held against RSS: the floor there is memory's; the commit rule is a latency cost, shown by delivery.
    if (k.phases.includes('capacity')) await each('capacity', [baselineTarget(k, 'uws-sse-memory', 'memory'), gatewayTarget(k)], t => capacity(ctx, k, t, hard))

    const notes = [
      ...throughputNotes(ctx, rows),
      ...verdicts(rows, settings.busyThreshold),
      ...(hard === undefined ? [] : [`file descriptors: servers and the client start with ulimit -n ${Math.min(k.nofile, hard)} (asked ${k.nofile}, hard limit ${hard})`]),
      ...phaseTables(rows, k, settings)
    ]
    return { rows, columns: SUMMARY_COLUMNS, compareBy: 'reqPerSec', notes }
  }
}
