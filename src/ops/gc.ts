import { PerformanceObserver } from 'node:perf_hooks'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'

const MiB = 1024 * 1024
/** V8's own growth factor of the young generation. */
const GROWTH_FACTOR = 2

/** Whether pretenuring was turned off: every reassertion turns it off again. */
let pretenuringOff = false
/** The young generation's cap in bytes (both semi-spaces); Infinity when not capped. */
let youngLimit = Infinity
let observer: PerformanceObserver | undefined

/**
 * Turns off V8's allocation-site pretenuring for this process.
 *
 * V8 allocates objects of an allocation site straight in the old generation
 * once enough of them survive a young-generation GC. A request's objects
 * often do: they live across a batch commit. Every young object then stored
 * into such an old object (a header map, a body, a parsed record) is kept
 * alive through each scavenge by the old-to-new remembered set, and only a
 * full mark-compact frees it. Under `npm run bench telemetry` (local bus, 50
 * connections) with `--trace-gc-nvp`: with pretenuring, 27% of the young
 * generation survived each scavenge and a mark-compact ran every ~3 s;
 * without it, 3% and none; `bench/cpu-ab.mjs` alternating the two: p99
 * 43.8 → 15.0 ms, 4% less CPU per request. Clearing the request context's
 * body fields when a request finished had the same effect, which points at
 * the context as the site.
 *
 * The flag is read at each GC, so setting it here, before any load, is
 * enough, but for a worker thread's start, which sets it back (`watchHeap`).
 */
export function disablePretenuring (): void {
  pretenuringOff = true
  watchHeap()
}

/**
 * Caps V8's young generation at `semiSpaceMiB` per semi-space, as node's
 * `--max-semi-space-size` does, but from inside the process, so it holds
 * however the gateway is started (that flag must be on node's command line).
 *
 * V8 grows the young generation by `--semi-space-growth-factor` at a GC whose
 * survivors fill it, up to 16 MiB per semi-space on this heap: two of them,
 * 32 MiB, which uploads grow it to and which then stay resident. The factor
 * is read at each growth, so once the space has reached the cap it is set to
 * 1 (no growth), and back to 2 should V8 shrink the space. With pretenuring
 * off (above) a smaller young generation costs telemetry nothing measurable:
 * 161, 153 and 155 µs of CPU per request at 16, 8 and 4 MiB, 50 connections
 * (`node bench/cpu-ab.mjs a=.:HEAP_SEMI_SPACE_MB=16 b=.:HEAP_SEMI_SPACE_MB=8`).
 *
 * Process-wide, like the flags it sets: a later call changes the cap.
 */
export function capYoungGeneration (semiSpaceMiB: number): void {
  youngLimit = 2 * semiSpaceMiB * MiB
  watchHeap()
}

/**
 * Sets the flags now, and again after every GC and once each worker thread
 * is online. V8's flags are process-wide, and a worker thread's start sets
 * them back to node's (measured: the growth factor was 2 again and the young
 * generation grew to 32 MiB; pretenuring came back with it). The hash pool
 * starts workers as load comes (an upload after 30 s without one starts
 * one), and when node has options of its own (`execArgv`, which a
 * worker inherits) the reset comes after the worker is online, so the flags
 * are also set after each GC: a late reset can then grow the space by one
 * step, at the next scavenge, and no further. Setting both costs about 9 µs,
 * against a scavenge every 50–200 ms under load.
 */
function watchHeap (): void {
  if (!observer) {
    observer = new PerformanceObserver(assertFlags)
    observer.observe({ entryTypes: ['gc'] })
    process.on('worker', worker => worker.once('online', assertFlags))
  }
  assertFlags()
}

function assertFlags (): void {
  if (pretenuringOff) setFlagsFromString('--no-allocation-site-pretenuring')
  if (youngLimit === Infinity) return
  const space = getHeapSpaceStatistics().find(s => s.space_name === 'new_space')
  setFlagsFromString(`--semi-space-growth-factor=${(space?.space_size ?? 0) >= youngLimit ? 1 : GROWTH_FACTOR}`)
}

const SEMI_SPACE_FLAG = '--max-semi-space-size'

/**
 * Whether capYoungGeneration holds in this process. Node 22 and later size
 * the young generation from node's command line alone (measured on Node 24:
 * 128 MiB of new space under allocation whatever is set from inside, 16 MiB
 * with the flag), so there it holds only when `--max-semi-space-size` was
 * given on the command line or in NODE_OPTIONS.
 */
export function youngGenerationCapped (execArgv: readonly string[] = process.execArgv, nodeOptions = process.env['NODE_OPTIONS'] ?? '', major = Number(process.versions.node.split('.')[0])): boolean {
  return major < 22 || [...execArgv, ...nodeOptions.split(/\s+/)].some(a => a.startsWith(`${SEMI_SPACE_FLAG}=`))
}

/** `execArgv` with the young generation's cap set to `semiSpaceMiB`, for a process about to be started. */
export function withSemiSpace (execArgv: readonly string[], semiSpaceMiB: number): string[] {
  return [...execArgv.filter(a => !a.startsWith(`${SEMI_SPACE_FLAG}=`)), `${SEMI_SPACE_FLAG}=${semiSpaceMiB}`]
}
