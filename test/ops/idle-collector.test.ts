import t, { type Test } from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import { IdleCollector } from '../../src/ops/index.js'
import { until } from '../helpers/http.js'

const MiB = 1024 * 1024

/**
 * A collector with a fake heap, clock and timers (a delay is crossed by a
 * tick, not waited out), counting its collections. `idleFor(ms)` tells it the
 * work went idle, ticks `ms` and gives the count.
 */
function fake (t: Test, options: { delayMs?: number } = {}) {
  const clock = FakeTimers.install({ toFake: ['setTimeout', 'clearTimeout'] })
  t.teardown(() => clock.uninstall())
  const state = { heap: 100 * MiB, now: 0, collections: 0 }
  const collector = new IdleCollector({
    delayMs: options.delayMs ?? 5,
    minIntervalMs: 10_000,
    minGrowthBytes: 8 * MiB,
    heapUsed: () => state.heap,
    now: () => state.now,
    collect: async () => {
      state.collections++
      state.heap = 100 * MiB
    }
  })
  const idleFor = async (ms: number): Promise<number> => {
    collector.idle()
    await clock.tickAsync(ms)
    return state.collections
  }
  return { collector, state, clock, idleFor }
}

t.test('idle after the heap grew: one collection once the delay has passed, not before', async t => {
  const { state, clock, idleFor } = fake(t, { delayMs: 1000 })
  state.heap += 20 * MiB
  t.equal(await idleFor(999), 0, '1 ms before the delay')
  await clock.tickAsync(1)
  t.equal(state.collections, 1)
  t.equal(state.heap, 100 * MiB)
})

t.test('busy again before the delay: no collection', async t => {
  const { collector, state, clock, idleFor } = fake(t, { delayMs: 1000 })
  state.heap += 20 * MiB
  await idleFor(500)
  collector.busy()
  await clock.tickAsync(5000)
  t.equal(state.collections, 0)
  t.equal(await idleFor(1000), 1, 'and once idle again for the whole delay, one')
})

t.test('the heap grew less than minGrowthBytes since the start or the last collection: no collection', async t => {
  const { state, idleFor } = fake(t)
  state.heap += 7 * MiB
  t.equal(await idleFor(10), 0, 'since the start')
  state.heap += 2 * MiB
  t.equal(await idleFor(10), 1)
  state.now += 60_000
  state.heap += 7 * MiB
  t.equal(await idleFor(10), 1, 'since the last collection')
})

t.test('not more often than minIntervalMs, however often the work goes idle', async t => {
  const { state, idleFor } = fake(t)
  for (let i = 0; i < 5; i++) {
    state.heap += 20 * MiB
    state.now += 2_000
    await idleFor(10)
  }
  t.equal(state.collections, 1, 'five bursts within 10 s')
  state.now += 10_000
  state.heap += 20 * MiB
  t.equal(await idleFor(10), 2)
})

t.test('the default collection frees old-generation garbage', async t => {
  // Objects kept across several scavenges are promoted; dropped, only a mark-compact frees them.
  const holder: { kept?: object[] } = { kept: Array.from({ length: 300_000 }, (_, i) => ({ i, s: `x${i}` })) }
  for (let i = 0; i < 20; i++) Array.from({ length: 100_000 }, (_, j) => ({ j }))
  const before = process.memoryUsage().heapUsed
  delete holder.kept
  let done = false
  const collector = new IdleCollector({ delayMs: 0, minIntervalMs: 0, minGrowthBytes: 0 })
  const heapAfter = (): boolean => { done = process.memoryUsage().heapUsed < before - 10 * MiB; return done }
  collector.idle()
  await until(heapAfter, 10_000)
  t.ok(done, `heap ${(before / MiB).toFixed(0)} → ${(process.memoryUsage().heapUsed / MiB).toFixed(0)} MiB`)
})
