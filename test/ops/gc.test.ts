import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const MiB = 1024 * 1024
const GC_MODULE = new URL('../../dist/ops/gc.js', import.meta.url).href

/**
 * In a fresh node process (the test runner's own heap has grown already):
 * `capYoungGeneration(cap)` when a cap is given, then young objects of which
 * many survive a scavenge (kept in batches), which is what makes V8 grow the
 * young generation; the loop yields so the GC observer runs between
 * scavenges, as it does between requests. The largest young generation seen.
 */
async function largestYoungGeneration (cap?: number): Promise<number> {
  const script = `
    import { getHeapSpaceStatistics } from 'node:v8'
    import { capYoungGeneration } from ${JSON.stringify(GC_MODULE)}
    const cap = ${cap ?? 0}
    if (cap) capYoungGeneration(cap)
    const newSpace = () => getHeapSpaceStatistics().find(s => s.space_name === 'new_space').space_size
    let kept = []
    let largest = 0
    for (let round = 0; round < 2000; round++) {
      for (let i = 0; i < 1000; i++) kept.push({ i, s: 'x' + i, a: [i, i] })
      if (kept.length > 200000) kept = []
      largest = Math.max(largest, newSpace())
      await new Promise(resolve => setImmediate(resolve))
    }
    console.log(largest)`
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script])
  return Number(stdout)
}

t.test('the young generation stays within its cap under a load that grows it past the cap without one', async t => {
  const [free, capped] = await Promise.all([largestYoungGeneration(), largestYoungGeneration(2)])
  t.ok(free > 2 * 2 * MiB, `uncapped, the load grew it to ${free / MiB} MiB`)
  t.ok(capped <= 2 * 2 * MiB, `capped at 2 MiB per semi-space: ${capped / MiB} MiB for both`)
})
