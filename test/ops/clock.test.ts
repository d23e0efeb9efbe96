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
