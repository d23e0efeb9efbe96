// The telemetry scenario's bus ceiling: bench/baselines/kafkajs-produce.mjs
// on the server's core, producing the records of a batch with kafkajs alone
// (gzip, acks=all), no server in front. A row with a wrk row's fields:
// reqPerSec is sends a second, `records` the records in each, serverCpu the
// producer's own CPU.
import { join } from 'node:path'
import { runNode } from '../../lib/child.mjs'
import { sampleWhile, othersCpu } from '../../lib/sampler.mjs'
import { notQuiet } from '../../lib/verdicts.mjs'
import { BENCH_DIR } from '../../lib/paths.mjs'

const SCRIPT = join(BENCH_DIR, 'baselines', 'kafkajs-produce.mjs')
const IN_FLIGHT = 4

/** The row; `kafkaPid` is sampled beside the producer, so that other processes' CPU can be told apart. */
export async function kafkajsRow (ctx, { label, brokers, kafkaPid, bodyFile, perSend }) {
  const { settings } = ctx
  const config = { brokers, topic: 'bench.kafkajs.telemetry', bodyFile, perSend, inFlight: IN_FLIGHT, warmup: settings.warmup, duration: settings.duration }
  ctx.log(`  ${label}: ${perSend} records a send, ${IN_FLIGHT} sends at once, warm-up ${settings.warmup} s, measuring ${settings.duration} s`)
  let pid
  const { value: { out }, proc: s, system } = await sampleWhile(kafkaPid, [], watch =>
    runNode({ label: 'kafkajs-produce.mjs', script: SCRIPT, config, cpu: ctx.serverCpu, timeoutMs: (settings.warmup + settings.duration + 60) * 1000, onStart: p => { pid = p; watch(p) } }))
  const others = othersCpu(system, s.cpuFraction, s.otherCpuFraction[pid])
  const notes = [`kafkajs alone on the server's core: ${perSend} records a send, gzip, acks=all, ${IN_FLIGHT} sends in flight; the producer's CPU is its own count over the measured window`]
  if (others > settings.busyThreshold) notes.push(notQuiet(others, ' during the run'))
  return {
    label,
    baseline: true,
    reqPerSec: out.sendsPerSec,
    requests: out.sends,
    durationSeconds: out.seconds,
    latencyMs: out.latencyMs,
    serverCpu: out.cpu,
    companionCpu: { kafka: s.cpuFraction },
    othersCpu: others,
    system,
    records: perSend,
    producer: out,
    problems: [],
    notes
  }
}
