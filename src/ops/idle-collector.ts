import { measureMemory } from 'node:vm'

const MiB = 1024 * 1024

export interface IdleCollectorOptions {
  /** How long the work must stay idle before collecting: a burst is over, not paused between two requests. */
  delayMs: number
  /** Fewest milliseconds between two collections, however often the work goes idle. */
  minIntervalMs: number
  /** Collect only when the heap grew by this much since the last collection (or the start). */
  minGrowthBytes: number
  /** Runs a full collection; by default V8's incremental marking (`v8Collect`). */
  collect?: () => Promise<void>
  heapUsed?: () => number
  now?: () => number
}

const IDLE_COLLECTOR_DEFAULTS: IdleCollectorOptions = { delayMs: 1000, minIntervalMs: 10_000, minGrowthBytes: 8 * MiB }

/**
 * A full collection once a burst of work has ended, for work whose garbage
 * outlives the young generation. An upload's per-part objects (the S3 SDK
 * builds its middleware for every request, about 9 KB, alive while the part
 * is sent) survive two scavenges and are promoted; V8 collects the old
 * generation when it reaches a multiple of what was live after the last
 * collection (up to 4× here), and its memory reducer only after seconds of
 * quiet. Rounds of uploads a few seconds apart thus grew the idle heap by
 * 3–5 MiB a round, and the RSS with it (`BENCH_EVIDENCE_REPEAT=8 npm run
 * bench evidence` reports the idle RSS between rounds). Collecting when the
 * uploads in flight fall to none, at most every `minIntervalMs`, holds the
 * idle heap near what is live, at the cost of one incremental mark-compact
 * while there is nothing to upload.
 */
export class IdleCollector {
  private readonly options: Required<IdleCollectorOptions>
  private timer: NodeJS.Timeout | undefined
  private lastAt = -Infinity
  private baseline: number

  constructor (options: IdleCollectorOptions = IDLE_COLLECTOR_DEFAULTS) {
    this.options = { heapUsed: () => process.memoryUsage().heapUsed, now: Date.now, ...options, collect: options.collect ?? v8Collect() }
    this.baseline = this.options.heapUsed()
  }

  /** Work started: a collection waiting for the quiet is called off. */
  busy (): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }

  /** The work is idle: collect after `delayMs` unless it is busy again by then. */
  idle (): void {
    this.busy()
    this.timer = setTimeout(() => { this.timer = undefined; this.maybeCollect() }, this.options.delayMs).unref()
  }

  private maybeCollect (): void {
    const now = this.options.now()
    if (now - this.lastAt < this.options.minIntervalMs) return
    if (this.options.heapUsed() - this.baseline < this.options.minGrowthBytes) return
    this.lastAt = now
    this.options.collect().then(() => { this.baseline = this.options.heapUsed() }, () => undefined)
  }
}

/**
 * A full collection by V8's incremental marking, started the one way
 * JavaScript can start it: `vm.measureMemory` in eager mode, which measures
 * after a collection it starts at once. Its marking runs beside the event
 * loop in steps (measured: the largest 16–19 ms, the final pause 3–9 ms, on a
 * heap of 45 MiB), where V8's `gc()` (`--expose-gc`) stops the loop for the
 * whole mark-compact (about 40 ms). Node prints an ExperimentalWarning for
 * `vm.measureMemory` the first time.
 */
function v8Collect (): () => Promise<void> {
  return async () => { await measureMemory({ execution: 'eager' }) }
}
