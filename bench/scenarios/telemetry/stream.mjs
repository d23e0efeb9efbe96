// The telemetry scenario's stream rows: wrk speaks no WebSocket, so
// bench/baselines/stream-client.mjs drives /v1/asset/track:stream from the
// load core, closed loop and then at a fixed share of that peak, while the
// server, the client and the broker are sampled as a wrk row's are. The rows
// have a wrk row's fields: reqPerSec is messages a second, `records` the
// records in each.
import { join } from 'node:path'
import { runNode } from '../../lib/child.mjs'
import { sampleWhile, othersCpu } from '../../lib/sampler.mjs'
import { notQuiet } from '../../lib/verdicts.mjs'
import { BENCH_DIR } from '../../lib/paths.mjs'

const CLIENT = join(BENCH_DIR, 'baselines', 'stream-client.mjs')

/** One client run (warm-up, then the measured window) against `server`: a row. */
async function streamRun (ctx, server, { token, bodyFile, k, companions, rate = 0, label }) {
  const { settings } = ctx
  const config = {
    url: server.url, token, bodyFile, streams: k.streams, perMessage: k.streamRecords, inFlight: k.streamInFlight,
    rate, warmup: settings.warmup, duration: settings.duration
  }
  ctx.log(`  ${label}: ${rate ? `paced at ${rate} messages/s, ` : ''}${k.streams} streams, ${k.streamRecords} record(s) a message, warm-up ${settings.warmup} s, measuring ${settings.duration} s`)
  let clientPid
  const { value: r, proc: s, system: sys } = await sampleWhile(server.pid, companions.filter(c => c.pid), watch =>
    runNode({ label: 'stream-client.mjs', script: CLIENT, config, cpu: ctx.wrkCpu, timeoutMs: (settings.warmup + settings.duration + 60) * 1000, onStart: p => { clientPid = p; watch(p) } }))
  const { out } = r
  const clientCpu = clientPid === undefined ? undefined : s.otherCpuFraction[clientPid]
  const companionCpu = Object.fromEntries(companions.filter(c => c.pid).map(c => [c.label, s.otherCpuFraction[c.pid]]))
  const others = s.cpuFraction === undefined ? undefined : othersCpu(sys, s.cpuFraction, clientCpu, ...Object.values(companionCpu))
  const problems = []
  const notes = [`stream-client.mjs: ${k.streams} streams, ${out.inFlightPerStream} records unacknowledged at most on each, ${out.messageBytes} B a message`]
  const refusals = Object.entries(out.refused ?? {})
  if (refusals.length) problems.push(`refused: ${refusals.map(([st, n]) => `${st} ${n}`).join(', ')}`)
  if (others > settings.busyThreshold) notes.push(notQuiet(others, ' during the run'))
  if (clientCpu > 0.9 && s.cpuFraction < 0.9) notes.push(`the stream client used ${Math.round(clientCpu * 100)}% of its core and the server ${Math.round(s.cpuFraction * 100)}%: the client, not the server, may be the limit`)
  return {
    label,
    reqPerSec: out.messagesPerSec,
    requests: out.messages,
    durationSeconds: out.seconds,
    latencyMs: out.latencyMs,
    peakRssBytes: s.peakRssBytes,
    peakRssSource: s.peakRssSource,
    endRssBytes: s.endRssBytes,
    serverCpu: s.cpuFraction,
    serverCpuSeconds: s.cpuSeconds,
    wrkCpu: clientCpu,
    companionCpu: Object.keys(companionCpu).length ? companionCpu : undefined,
    othersCpu: others,
    system: sys,
    stream: out,
    problems,
    notes
  }
}

/** The closed-loop stream row and, after it on the same server, the fixed-rate one at `k.pacedLoad` of its peak. */
export async function streamRows (ctx, server, { label, token, bodyFile, k, companions }) {
  const row = await streamRun(ctx, server, { label, token, bodyFile, k, companions })
  const rows = [row]
  if (row.reqPerSec > 0) {
    const rate = Math.max(1, Math.round(row.reqPerSec * k.pacedLoad))
    const paced = await streamRun(ctx, server, { label: `${label}@${Math.round(k.pacedLoad * 100)}%`, token, bodyFile, k, companions, rate })
    paced.paced = { targetReqPerSec: rate, load: k.pacedLoad, of: row.reqPerSec, connections: k.streams, late: paced.stream.late, sends: paced.requests, lateMs: 2 }
    paced.notes.push(`fixed rate ${rate} messages/s (${Math.round(k.pacedLoad * 100)}% of ${Math.round(row.reqPerSec)}) over ${k.streams} streams, latency from each message's due time: ` +
      `${Math.round(paced.reqPerSec)} messages/s done, server ${Math.round(paced.serverCpu * 100)}% of its core; ${paced.stream.late} sends late by > 2 ms`)
    if (paced.reqPerSec < 0.95 * rate) paced.notes.push(`did not hold the rate (${Math.round(paced.reqPerSec)} of ${rate} messages/s): the server fell behind`)
    rows.push(paced)
  }
  return rows
}
