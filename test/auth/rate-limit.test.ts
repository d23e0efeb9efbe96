import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import { CLEAN, KNOWN, LoginThrottle, SUSPECT, clientAddress, networkPrefix } from '../../src/auth/index.js'

function throttle (clock: { now: number }) {
  return new LoginThrottle({ perClient: 3, perAddress: 5, perPrefix: 8, windowMs: 60_000, now: () => clock.now })
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
  const th = new LoginThrottle({ perClient: 3, perAddress: 7, perPrefix: 100, windowMs: 60_000, now: () => 0 })
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
  const th = new LoginThrottle({ perClient: 3, perAddress: 5, perPrefix: 100, windowMs: 60_000 })
  for (let i = 0; i < 3; i++) th.failed('cam-1', '10.0.0.1')
  clock.setSystemTime(Date.now() - 3_600_000)
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 60)
  clock.tick(60_000)
  t.equal(th.retryAfter('cam-1', '10.0.0.1'), 0, 'free when the window ends')
})

t.test('a network spreading its guesses over many addresses is limited at the network threshold: an IPv4 /24, an IPv6 /64', async t => {
  const clock = { now: 0 }
  const th = throttle(clock)
  for (let i = 0; i < 8; i++) th.failed(`guess-${i}`, `2001:db8:1:2:${i.toString(16)}::1`)
  t.equal(th.retryAfter('cam-1', '2001:db8:1:2:ffff::9'), 60, 'eight addresses of one /64, one failure each, lock the /64')
  t.equal(th.retryAfter('cam-1', '2001:db8:1:3::1'), 0, 'the next /64 is not')
  for (let i = 0; i < 8; i++) th.failed(undefined, `198.51.100.${i}`)
  t.equal(th.retryAfter('cam-1', '198.51.100.200'), 60, 'nor an IPv4 /24, which one host rarely holds, but a NAT pool can')
  t.equal(th.retryAfter('cam-1', '::ffff:198.51.100.201'), 60, 'written as IPv4-mapped IPv6 too')
  t.equal(th.retryAfter('cam-1', '198.51.101.1'), 0)
})

t.test('networks as keys', async t => {
  t.equal(networkPrefix('203.0.113.7'), '203.0.113.0/24')
  t.equal(networkPrefix('::ffff:203.0.113.7'), '203.0.113.0/24')
  t.equal(networkPrefix('2001:db8::1'), '2001:db8:0:0::/64')
  t.equal(networkPrefix('2001:0db8:0000:0000:ffff::1'), '2001:db8:0:0::/64')
  t.equal(networkPrefix('2001:db8:a:b:c:d:e:f'), '2001:db8:a:b::/64')
  t.equal(networkPrefix('::1'), '0:0:0:0::/64')
  t.equal(networkPrefix('fe80::1%eth0'), 'fe80:0:0:0::/64')
  t.equal(networkPrefix('not an address'), 'not an address')
  t.equal(networkPrefix('203.0.113.7', true), '203.0.0.0/16')
  t.equal(networkPrefix('::ffff:203.0.113.7', true), '203.0.0.0/16')
  t.equal(networkPrefix('2001:db8:a:b:c:d:e:f', true), '2001:db8:a::/48')
  t.equal(networkPrefix('2001:db8::1', true), '2001:db8:0::/48')
})

t.test('lanes: a client that logged in from this network goes first; a network with a failure goes last', async t => {
  const clock = { now: 0 }
  const th = throttle(clock)
  t.equal(th.lane('cam-1', '10.0.0.1'), CLEAN)
  th.succeeded('cam-1', '10.0.0.1')
  t.equal(th.lane('cam-1', '10.0.0.77'), KNOWN, 'known from its network, whichever address of it')
  t.equal(th.lane('cam-1', '10.0.1.1'), CLEAN, 'not from another network: a guesser elsewhere cannot claim the place')
  t.equal(th.lane('cam-2', '10.0.0.1'), CLEAN, 'nor another client')
  th.failed('cam-9', '10.0.0.200')
  t.equal(th.lane('cam-2', '10.0.0.1'), SUSPECT, 'a failure anywhere in the network makes its unknown logins wait last')
  t.equal(th.lane('cam-1', '10.0.0.1'), KNOWN, 'but not its known clients')
  clock.now += 24 * 3600 * 1000
  t.equal(th.lane('cam-1', '10.0.0.1'), CLEAN, 'known for a day')
})
