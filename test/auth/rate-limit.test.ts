import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import { LoginThrottle, clientAddress } from '../../src/auth/index.js'

function throttle (clock: { now: number }) {
  return new LoginThrottle({ perClient: 3, perAddress: 5, windowMs: 60_000, now: () => clock.now })
}

t.test('one client\'s wrong secrets lock that client at that address, and nothing else', async t => {
  const clock = { now: 0 }
  const th = throttle(clock)
  for (let i = 0; i < 3; i++) th.failed('cam-1', '10.0.0.1')
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 60, 'locked for the rest of the window')
  t.equal(th.retryAfter('cam-2', '10.0.0.1'), 0, 'another client behind the same address is not')
  t.equal(th.retryAfter('cam-1', '10.9.9.9'), 0, 'the same client from elsewhere is not: an outsider cannot lock it out')
  clock.now += 59_000
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 1)
  clock.now += 1_000
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 0, 'free again when the window ends')
})

t.test('one address spraying client_ids is limited at the address threshold, for every client_id', async t => {
  const clock = { now: 0 }
  const th = throttle(clock)
  for (let i = 0; i < 4; i++) th.failed(`guess-${i}`, '10.0.0.66')
  th.failed(undefined, '10.0.0.66')
  t.equal(th.retryAfter('cam-1', '10.0.0.66'), 60, 'five failures from the address lock it')
  t.equal(th.retryAfter(undefined, '10.0.0.66'), 60, 'also for ids outside the grammar')
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 0, 'other addresses are not affected')
})

t.test('a success clears its own (client, address) count only', async t => {
  const th = new LoginThrottle({ perClient: 3, perAddress: 7, windowMs: 60_000, now: () => 0 })
  th.failed('cam-1', '10.0.0.1')
  th.failed('cam-1', '10.0.0.1')
  th.failed('cam-2', '10.0.0.1')
  th.failed('cam-2', '10.0.0.1')
  th.succeeded('cam-1', '10.0.0.1')
  th.failed('cam-1', '10.0.0.1')
  th.failed('cam-1', '10.0.0.1')
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 0, 'the pair count restarted')
  th.failed('cam-3', '10.0.0.1')
  t.equal(th.retryAfter('cam-3', '10.0.0.1'), 60, 'but the address count was not reset by the success: 7 failures lock it')
})

t.test('the address: the socket, or the last entry of the configured header', async t => {
  t.equal(clientAddress('127.0.0.1', undefined), '127.0.0.1')
  t.equal(clientAddress('127.0.0.1', '203.0.113.7'), '203.0.113.7')
  t.equal(clientAddress('127.0.0.1', 'forged, 198.51.100.1 , 203.0.113.7 '), '203.0.113.7', 'the entry the nearest proxy appended')
  t.equal(clientAddress('127.0.0.1', ' '), '127.0.0.1', 'an empty header is no address')
  t.equal(clientAddress('127.0.0.1', 'x'.repeat(1000)).length, 64, 'bounded')
})

t.test('by default a lockout is timed on a clock that never steps: a wall clock set back does not stretch it', async t => {
  const clock = FakeTimers.install({ toFake: ['Date', 'performance'], now: Date.now() })
  t.teardown(() => clock.uninstall())
  const th = new LoginThrottle({ perClient: 3, perAddress: 5, windowMs: 60_000 })
  for (let i = 0; i < 3; i++) th.failed('cam-1', '10.0.0.1')
  clock.setSystemTime(Date.now() - 3_600_000)
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 60)
  clock.tick(60_000)
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 0, 'free when the window ends')
})
