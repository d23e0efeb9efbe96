// The evidence scenario's settings (BENCH_EVIDENCE_*, BENCH_MINIO_CPU and the
// gateway's own S3_* when set in the shell) and constants.
import { intEnv, listEnv, choiceEnv, companionCpu, UsageError } from '../../lib/env.mjs'

export const MiB = 1024 * 1024
export const BODY_LIMIT = 268435456 // EVIDENCE_MAX_BYTES default: the whole request, envelope and boundaries included
// The memory profile for processes that take uploads (docs/evidence.md): a
// 2 MiB young generation instead of V8's default 16 MiB, a pool of 3 slabs.
export const LEAN = { nodeArgs: ['--max-semi-space-size=2'], slabs: 3 }
// prom-client's monitorEventLoopDelay resolution: the histogram holds the time
// between its 10 ms timer ticks, so an idle loop reads ~10.1 ms.
export const LAG_RESOLUTION_S = 0.010

export { EVIDENCE_TARGETS as TARGETS } from '../../lib/goals.mjs'

/** How late the loop ran its timers (p99, ms): the lag histogram's p99 minus its tick. */
export const lagMs = r => (r.lagP99Seconds === undefined ? undefined : Math.max(0, r.lagP99Seconds - LAG_RESOLUTION_S) * 1000)

export function knobs (settings) {
  const concurrency = listEnv('BENCH_EVIDENCE_CONCURRENCY', ['1', '4']).map(Number)
  if (concurrency.some(n => !Number.isInteger(n) || n < 1 || n > 64)) throw new UsageError('BENCH_EVIDENCE_CONCURRENCY must list integers 1..64, e.g. 1,4')
  return {
    bytes: intEnv('BENCH_EVIDENCE_BYTES', 256_000_000, 1),
    warmupBytes: intEnv('BENCH_EVIDENCE_WARMUP_BYTES', 16_000_000, 0),
    concurrency,
    timeoutS: intEnv('BENCH_EVIDENCE_TIMEOUT', 300, 1),
    repeat: intEnv('BENCH_EVIDENCE_REPEAT', 3, 1),
    dir: process.env.BENCH_EVIDENCE_DIR || '/tmp/evidence-bench',
    variant: choiceEnv('BENCH_EVIDENCE_VARIANT', 'auto', ['auto', 'always', 'never']),
    // Resumable (tus) rows: the same clip in PATCHes of this many bytes; 0 runs none.
    tusPatchBytes: intEnv('BENCH_EVIDENCE_TUS_PATCH_BYTES', 8 * MiB, 0),
    // Another profile for gateway-lean, to find the cheapest one within the target.
    lean: { nodeArgs: listEnv('BENCH_EVIDENCE_LEAN_NODE_ARGS', LEAN.nodeArgs), slabs: intEnv('BENCH_EVIDENCE_LEAN_SLABS', LEAN.slabs, 1) },
    minioCpu: companionCpu('BENCH_MINIO_CPU', settings),
    // The gateway's own variables, when set in the shell, apply to both the gateway and the direct baseline.
    partSize: intEnv('S3_PART_SIZE', 8 * MiB, 5 * MiB),
    queueSize: intEnv('S3_QUEUE_SIZE', 4, 1),
    // Only reported: the gateway reads it itself (inherited from the shell).
    bufferBytes: intEnv('STORAGE_BUFFER_BYTES', 32 * MiB, 5 * MiB)
  }
}
