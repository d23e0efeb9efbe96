// CPU per call of a few variants of one operation, for the micro-benches
// (byte-check, record-json, access-log): CPU time (process.cpuUsage, every
// thread), not wall time, alternated round by round so that a machine that
// slows down slows every variant alike.
import { median } from './stats.mjs'

/**
 * CPU µs per call of each of `variants` (name → fn(i)), `rounds` rounds of
 * `seconds` each, `batch` calls between clock reads; with `turn`, a turn of
 * the event loop after each batch, as between requests, so that what the
 * calls leave to the loop (a destination's writes) is paid for too.
 * Returns name → the rounds' figures.
 */
export async function cpuPerCall (variants, { rounds, seconds, batch = 1000, turn = false }) {
  const us = Object.fromEntries(Object.keys(variants).map(name => [name, []]))
  for (let round = 0; round < rounds; round++) {
    for (const [name, call] of Object.entries(variants)) {
      const c0 = process.cpuUsage()
      const end = performance.now() + seconds * 1000
      let calls = 0
      while (performance.now() < end) {
        for (let i = 0; i < batch; i++) call(i)
        calls += batch
        if (turn) await new Promise(resolve => setImmediate(resolve))
      }
      const c = process.cpuUsage(c0)
      us[name].push((c.user + c.system) / calls)
    }
  }
  return us
}

/** One line per variant: the median, then each round. */
export function printPerCall (us) {
  const width = Math.max(...Object.keys(us).map(name => name.length))
  for (const [name, list] of Object.entries(us)) console.log(`  ${name.padEnd(width)} ${median(list).toFixed(2).padStart(6)} µs (rounds: ${list.map(v => v.toFixed(2)).join(' ')})`)
}
