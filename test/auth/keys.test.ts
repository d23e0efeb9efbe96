import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import { SignJWT, jwtVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose'
import { randomUUID } from 'node:crypto'
import { LmdbKeyVault, KeyStore, SharedKeyVault } from '../../src/auth/index.js'
import { SharedDocuments } from '../../src/cluster/index.js'
import { loadConfig } from '../../src/config/index.js'
import { expiredKeys, rotationDue, signingKey } from '../../src/auth/key-schedule.js'
import type { ListedKey } from '../../src/auth/key-vault.js'
import { openState } from '../../src/state/index.js'
import { sharedInfra } from '../helpers/infra.js'
import { gatewayKeys, s3Client } from '../helpers/s3.js'

const DAY = 86400
const DAY_MS = DAY * 1000

const kidsOf = (jwks: string): string[] => (JSON.parse(jwks) as JSONWebKeySet).keys.map(k => k.kid!)

t.test('a new key is published AUTH_KEY_PUBLISH_LEAD_S before it signs, and leaves once its successor has signed past the last token\'s expiry', async t => {
  // The store's clock is `now`; this process's monotonic clock, which carries it forward between readings, is `clock`.
  const clock = FakeTimers.install({ toFake: ['performance'] })
  t.teardown(() => clock.uninstall())
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  let now = Date.parse('2026-01-01T00:00:00Z')
  const LEAD_MS = 900_000
  const keys = new KeyStore(new LmdbKeyVault(state, () => now), { tokenTtlS: DAY, rotationS: 30 * DAY, publishLeadS: LEAD_MS / 1000 })
  await keys.init()
  const first = keys.current.kid
  t.same(kidsOf(keys.jwks), [first], 'the first key signs at once')
  const token = await new SignJWT({}).setProtectedHeader({ alg: 'RS256', kid: first }).setExpirationTime(now / 1000 + 30 * DAY + DAY).sign(keys.current.privateKey)

  now += 30 * DAY_MS - 1
  await keys.rotateIfDue()
  t.same(kidsOf(keys.jwks), [first], 'not due a millisecond before 30 days')
  now += 1
  await keys.rotateIfDue()
  const second = kidsOf(keys.jwks)[1]!
  t.same(kidsOf(keys.jwks), [first, second], 'at 30 days the next key is published')
  t.equal(keys.current.kid, first, 'and the old key still signs')
  now += LEAD_MS - 1
  await keys.rotateIfDue()
  t.equal(keys.current.kid, first, 'a millisecond before the lead has passed')
  clock.tick(1)
  t.equal(keys.current.kid, second, 'the new key signs once the lead has passed, without another reading')
  t.same(kidsOf(keys.jwks), [first, second], 'both keys are published')
  await t.resolves(jwtVerify(token, createLocalJWKSet(JSON.parse(keys.jwks)), { currentDate: new Date(now) }), 'a token of the old key still verifies against the set')

  // The old key signed until the new one took over; its last token expires a day later, and five minutes of margin.
  now += 1 + DAY_MS + 300_000 - 1
  await keys.rotateIfDue()
  t.same(kidsOf(keys.jwks), [first, second], 'kept until the last token it signed has expired, and the margin')
  now += 1
  await keys.rotateIfDue()
  t.same(kidsOf(keys.jwks), [second], 'then removed')
  t.equal(await keys.publicKey(first), undefined)
})

t.test('the schedule is a function of the listing and the vault\'s clock alone', async t => {
  const key = (epoch: number, publishedAt: number): ListedKey => ({ kid: `k${epoch}`, epoch, created_at: 0, published_at: publishedAt, private_pem: '', public_jwk: {} })
  const schedule = { leadMs: 10, rotationMs: 100, retainMs: 50 }
  t.equal(signingKey([], 0, 10), undefined)
  t.equal(signingKey([key(1, 1000)], 0, 10)?.kid, 'k1', 'a lone key signs at once, even published "after" now')
  const two = [key(1, 0), key(2, 100)]
  t.same([109, 110].map(now => signingKey(two, now, 10)?.kid), ['k1', 'k2'], 'the next signs once its lead has passed')
  t.same([99, 100].map(now => rotationDue([key(1, 0)], now, schedule)), [false, true], 'due when the newest is rotationMs old')
  t.ok(rotationDue([], 0, schedule), 'due when there is none')
  t.same([159, 160].map(now => expiredKeys(two, now, schedule).map(k => k.kid)), [[], ['k1']], 'expired once the successor has signed for retainMs')
  const three = [key(1, 0), key(2, 100), key(3, 200)]
  t.same(expiredKeys(three, 205, schedule).map(k => k.kid), ['k1'], 'the newest is never expired, nor a key whose successor does not sign yet')
})

t.test('a key made by another process is found by kid', async t => {
  const dir = t.testdir()
  const a = openState(dir)
  t.teardown(() => a.close())
  const signer = new KeyStore(new LmdbKeyVault(a), { tokenTtlS: DAY, rotationS: 30 * DAY, publishLeadS: 900 })
  const verifier = new KeyStore(new LmdbKeyVault(a), { tokenTtlS: DAY, rotationS: 30 * DAY, publishLeadS: 900 })
  await signer.init()
  await verifier.init()
  await signer.rotateIfDue(true)
  t.ok(await verifier.publicKey(signer.current.kid), 'reloaded from LMDB on an unknown kid')
  t.equal(await verifier.publicKey('no-such-kid'), undefined)
})

t.test('processes that rotate at once agree on one key per epoch', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  let now = Date.now()
  const vault = new LmdbKeyVault(state, () => now)
  const a = new KeyStore(vault, { tokenTtlS: DAY, rotationS: 30 * DAY, publishLeadS: 900 })
  const b = new KeyStore(vault, { tokenTtlS: DAY, rotationS: 30 * DAY, publishLeadS: 900 })
  await Promise.all([a.init(), b.init()])
  t.equal(a.current.kid, b.current.kid, 'both sign with the first key written')
  await Promise.all([a.rotateIfDue(true), b.rotateIfDue(true)])
  const listed = (await vault.list()).keys
  t.same(listed.map(k => k.epoch), [1, 2])
  t.equal(a.jwks, b.jwks, 'the same key set, byte for byte')
  now += 900_000
  await Promise.all([a.rotateIfDue(), b.rotateIfDue()])
  t.same([a.current.kid, b.current.kid], [listed[1]!.kid, listed[1]!.kid], 'and, once its lead has passed, both sign with the one key of the next epoch')
})

t.test('an unknown kid looks in the vault at most once a second, on a clock that a stepped wall clock does not move', async t => {
  const clock = FakeTimers.install({ toFake: ['performance', 'Date'], now: Date.now() })
  t.teardown(() => clock.uninstall())
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const inner = new LmdbKeyVault(state)
  let lists = 0
  const vault = { list: async () => { lists++; return inner.list() }, create: inner.create.bind(inner), remove: inner.remove.bind(inner) }
  const keys = new KeyStore(vault, { tokenTtlS: DAY, rotationS: 30 * DAY, publishLeadS: 900 })
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
  clock.setSystemTime(Date.now() - 3_600_000)
  clock.tick(1000)
  await keys.publicKey('made-up-after-the-step')
  t.equal(lists, 3, 'the wall clock set back an hour: still one more a second later')
})

t.test('in a cluster, a process whose clock is 6 minutes fast neither rotates early, nor removes a key, nor signs before the lead has passed on S3\'s clock', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const config = loadConfig({ STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: `keys-${randomUUID()}`, S3_REGION: infra.AWS_REGION })
  const documents = new SharedDocuments(config)
  t.teardown(() => documents.stop())
  await documents.start()
  const options = { tokenTtlS: 60, rotationS: 60, publishLeadS: 30 }
  // A node with a good clock made the first key and, just now, the next one.
  const good = new KeyStore(new SharedKeyVault(documents), options)
  await good.init()
  await good.rotateIfDue(true)
  const [first, next] = kidsOf(good.jwks)
  const before = Date.now()
  const started = performance.now()

  const clock = FakeTimers.install({ toFake: ['Date'], now: before + 6 * 60_000 })
  t.teardown(() => clock.uninstall())
  const fast = new KeyStore(new SharedKeyVault(documents), options)
  await fast.init()
  await fast.rotateIfDue()
  t.same(kidsOf(fast.jwks), [first, next], 'both keys published: none added early, none removed')
  t.same((await gatewayKeys(s3Client(infra), config.s3Bucket, 'auth/keys/')).length, 2, 'and S3 holds those two')
  t.equal(fast.current.kid, first, 'the first key still signs: the next one\'s lead has not passed on S3\'s clock')
  const skew = fast.now() - (before + performance.now() - started)
  t.ok(Math.abs(skew) < 5_000, `its clock is S3's, not its own 6 minutes ahead (${skew} ms off)`)
})
