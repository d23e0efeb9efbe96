import { setFlagsFromString } from 'node:v8'

/**
 * Turns off V8's allocation-site pretenuring for this process.
 *
 * V8 allocates objects of an allocation site straight in the old generation
 * once enough of them survive a young-generation GC. A request's objects
 * often do: they live across a batch commit. Every young object then stored
 * into such an old object (a header map, a body, a parsed record) is kept
 * alive through each scavenge by the old-to-new remembered set, and only a
 * full mark-compact frees it. Measured with `--trace-gc-nvp` (telemetry,
 * local bus, 50 connections): with pretenuring, 27% of the young generation
 * survived each scavenge and a mark-compact ran every ~3 s; without it, 3%
 * and none. An A/B of alternated rounds: p99 43.8 → 15.0 ms, 4% less CPU per
 * request, 6% more requests a second. Clearing the request context's body
 * fields when a request finished had the same effect, which points at the
 * context as the site (bench/README.md, "quiet machine").
 *
 * The flag is read at each GC, so setting it here, before any load, is enough.
 */
export function disablePretenuring (): void {
  setFlagsFromString('--no-allocation-site-pretenuring')
}
