import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import { SignJWT, jwtVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose'
import { LmdbKeyVault, KeyStore } from '../../src/auth/index.js'
import { openState } from '../../src/state/index.js'

const DAY = 86400
const DAY_MS = DAY * 1000

t.test('rotation keeps the old key published until its tokens have expired', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  let now = Date.parse('2026-01-01T00:00:00Z')
  const keys = new KeyStore(new LmdbKeyVault(state), { tokenTtlS: DAY, rotationS: 30 * DAY, now: () => now })
  await keys.init()
  const first = keys.current.kid
  const token = await new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: first }).setExpirationTime(now / 1000 + DAY).sign(keys.current.privateKey)

  now += 10 * DAY_MS
  await keys.rotateIfDue()
  t.equal(keys.current.kid, first, 'not due yet')

  now += 21 * DAY_MS
  await keys.rotateIfDue()
  const second = keys.current.kid
  t.not(second, first, 'a new key signs once the old one is 30 days old')
  const published = (JSON.parse(keys.jwks) as JSONWebKeySet).keys.map(k => k.kid)
  t.same(published.sort(), [first, second].sort(), 'both keys are published')
  await t.resolves(jwtVerify(token, createLocalJWKSet(JSON.parse(keys.jwks)), { currentDate: new Date(now - 31 * DAY_MS) }), 'a token of the old key still verifies against the set')

  now += DAY_MS + 600_000
  await keys.rotateIfDue()
  t.same((JSON.parse(keys.jwks) as JSONWebKeySet).keys.map(k => k.kid), [second], 'the old key leaves once its last token expired')
  t.equal(await keys.publicKey(first), undefined)
})

t.test('a key made by another process is found by kid', async t => {
  const dir = t.testdir()
  const a = openState(dir)
  t.teardown(() => a.close())
  const signer = new KeyStore(new LmdbKeyVault(a), { tokenTtlS: DAY, rotationS: 30 * DAY })
  const verifier = new KeyStore(new LmdbKeyVault(a), { tokenTtlS: DAY, rotationS: 30 * DAY })
  await signer.init()
  await verifier.init()
  await signer.rotateIfDue(true)
  t.ok(await verifier.publicKey(signer.current.kid), 'reloaded from LMDB on an unknown kid')
  t.equal(await verifier.publicKey('no-such-kid'), undefined)
})

t.test('processes that rotate at once agree on one key per epoch', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const vault = new LmdbKeyVault(state)
  const a = new KeyStore(vault, { tokenTtlS: DAY, rotationS: 30 * DAY })
  const b = new KeyStore(vault, { tokenTtlS: DAY, rotationS: 30 * DAY })
  await Promise.all([a.init(), b.init()])
  t.equal(a.current.kid, b.current.kid, 'both sign with the first key written')
  await Promise.all([a.rotateIfDue(true), b.rotateIfDue(true)])
  t.equal(a.current.kid, b.current.kid, 'and with the one key of the next epoch')
  t.same((await vault.list()).map(k => k.epoch), [1, 2])
  t.equal(a.jwks, b.jwks, 'the same key set, byte for byte')
})

t.test('an unknown kid looks in the vault at most once a second, on a clock that a stepped wall clock does not move', async t => {
  const clock = FakeTimers.install({ toFake: ['performance'] })
  t.teardown(() => clock.uninstall())
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const inner = new LmdbKeyVault(state)
  let lists = 0
  const vault = { list: async () => { lists++; return inner.list() }, create: inner.create.bind(inner), remove: inner.remove.bind(inner) }
  let now = Date.parse('2026-01-01T00:00:00Z')
  const keys = new KeyStore(vault, { tokenTtlS: DAY, rotationS: 30 * DAY, now: () => now })
  await keys.init()
  lists = 0
  const lookups = await Promise.all(Array.from({ length: 50 }, (_, i) => keys.publicKey(`made-up-${i}`)))
  t.same(new Set(lookups), new Set([undefined]))
  t.equal(lists, 1, 'fifty made-up kids at once: one look')
  await keys.publicKey('made-up-again')
  t.equal(lists, 1, 'within the second: none')
  clock.tick(1000)
  await keys.publicKey('made-up-later')
  t.equal(lists, 2, 'a second later: one more')
  now -= 3_600_000
  clock.tick(1000)
  await keys.publicKey('made-up-after-the-step')
  t.equal(lists, 3, 'the wall clock set back an hour: still one more a second later')
})
