import t from 'tap'
import { isoNow } from '../../src/ops/clock.js'

t.test('isoNow formats each millisecond once, and never hands one millisecond another\'s string', async t => {
  t.equal(isoNow(1_000), '1970-01-01T00:00:01.000Z')
  t.equal(isoNow(1_000), '1970-01-01T00:00:01.000Z')
  t.equal(isoNow(1_001), '1970-01-01T00:00:01.001Z')
  t.equal(isoNow(1_000), '1970-01-01T00:00:01.000Z', 'back to an earlier millisecond (a clock step)')
  const before = Date.now()
  const now = Date.parse(isoNow())
  t.ok(now >= before && now <= Date.now(), 'without an argument, the current time')
})

t.test('isoNow matches toISOString across seconds, days, years and dates before 1970', async t => {
  const starts = [0, 999, Date.UTC(2026, 11, 31, 23, 59, 59, 990), Date.UTC(2024, 1, 29, 12, 0, 0, 0), -1_500, Date.now()]
  let wrong = 0
  for (const start of starts) {
    for (let ms = start; ms < start + 2_100; ms += 7) if (isoNow(ms) !== new Date(ms).toISOString()) wrong++
    for (let ms = start + 2_100; ms > start; ms -= 13) if (isoNow(ms) !== new Date(ms).toISOString()) wrong++
  }
  t.equal(wrong, 0)
})
