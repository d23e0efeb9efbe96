import t, { type Test } from 'tap'
import pino from 'pino'
import { promises as fs } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { CLEAN, ClientRegistry, Credentials, KNOWN, LmdbClientStore, ScryptPool, SUSPECT, hashSecret, verifySecret, type Lane } from '../../src/auth/index.js'
import { openState } from '../../src/state/index.js'

/** A hasher that does real scrypt (libuv is fine in a unit test) and counts the checks. */
function countingHasher () {
  const calls: string[] = []
  let hold: Promise<void> | undefined
  return {
    calls,
    holdChecks (until: Promise<void>) { hold = until },
    hash: (secret: string) => hashSecret(secret),
    verify: async (stored: string, secret: string) => {
      calls.push(secret)
      if (hold) await hold
      return verifySecret(stored, secret)
    },
    close: async () => {}
  }
}

async function setup (t: Test, cacheTtlMs = 60_000) {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const clients = new ClientRegistry(new LmdbClientStore(state))
  const clock = { now: 0 }
  const hasher = countingHasher()
  const credentials = new Credentials(clients, { threads: 1, queue: 1, cacheTtlMs, hasher, now: () => clock.now })
  await credentials.start(undefined, pino({ level: 'silent' }))
  await clients.put({ client_id: 'cam-1', client_secret_hash: await hashSecret('right'), audiences: ['a'], scopes: [], tenant: 'cam-1' })
  return { clients, credentials, hasher, clock }
}

t.test('a verified secret is not hashed again within the TTL, and is after it', async t => {
  const { credentials, hasher, clock } = await setup(t)
  t.equal((await credentials.authenticate('cam-1', 'right'))?.client_id, 'cam-1')
  t.equal((await credentials.authenticate('cam-1', 'right'))?.client_id, 'cam-1')
  t.equal(hasher.calls.length, 1, 'the second login cost no hash')
  clock.now += 60_000
  t.equal((await credentials.authenticate('cam-1', 'right'))?.client_id, 'cam-1')
  t.equal(hasher.calls.length, 2, 'expired: hashed again')
})

t.test('a wrong secret is never cached: every miss costs a hash', async t => {
  const { credentials, hasher } = await setup(t)
  await credentials.authenticate('cam-1', 'right')
  t.equal(await credentials.authenticate('cam-1', 'wrong'), undefined)
  t.equal(await credentials.authenticate('cam-1', 'wrong'), undefined)
  t.equal(await credentials.authenticate('nobody', 'right'), undefined, 'an unknown client is checked against the decoy')
  t.equal(hasher.calls.length, 4)
})

t.test('a rotated secret invalidates what was cached for the old one', async t => {
  const { clients, credentials } = await setup(t)
  await credentials.authenticate('cam-1', 'right')
  await clients.put({ ...(await clients.get('cam-1'))!, client_secret_hash: await hashSecret('rotated') })
  t.equal(await credentials.authenticate('cam-1', 'right'), undefined, 'the old secret no longer logs in')
  t.equal((await credentials.authenticate('cam-1', 'rotated'))?.client_id, 'cam-1')
})

t.test('concurrent logins with the same secret share one hash', async t => {
  const { credentials, hasher } = await setup(t)
  let release!: () => void
  hasher.holdChecks(new Promise<void>(resolve => { release = resolve }))
  const logins = Array.from({ length: 50 }, () => credentials.authenticate('cam-1', 'right'))
  release()
  t.same((await Promise.all(logins)).map(c => c?.client_id), Array(50).fill('cam-1'))
  t.equal(hasher.calls.length, 1)
})

t.test('TTL 0 turns the cache off', async t => {
  const { credentials, hasher } = await setup(t, 0)
  await credentials.authenticate('cam-1', 'right')
  await credentials.authenticate('cam-1', 'right')
  t.equal(hasher.calls.length, 2)
})

t.test('the pool answers 503 overloaded with Retry-After once threads and the lanes a check may use are taken', async t => {
  const pool = new ScryptPool({ threads: 1, queue: 1 })
  t.teardown(() => pool.close())
  const stored = await pool.hash('s')
  const running = [pool.verify(stored, 's', SUSPECT), pool.verify(stored, 'x', SUSPECT)]
  await t.rejects(pool.verify(stored, 's', SUSPECT), { code: 'overloaded', status: 503, headers: { 'retry-after': '1' } })
  t.same(pool.waiting, [0, 0, 1])
  const clean = [pool.verify(stored, 's', CLEAN)]
  await t.rejects(pool.verify(stored, 's', CLEAN), { code: 'overloaded' }, 'a clean check spills only into the later lanes, and the suspect one is full')
  t.same(pool.waiting, [0, 1, 1])
  t.same(await Promise.all([...running, ...clean]), [true, false, true], 'the admitted checks complete')
  t.equal(await pool.verify(stored, 's'), true, 'and there is room again')
})

t.test('a free thread serves the known lane first, then the clean one, the suspect one last; a full lane spills into the later ones', async t => {
  const pool = new ScryptPool({ threads: 1, queue: 2 })
  t.teardown(() => pool.close())
  const stored = await pool.hash('s')
  const order: string[] = []
  const check = (name: string, lane: Lane): Promise<void> => pool.verify(stored, 's', lane).then(() => { order.push(name) })
  const first = check('first', SUSPECT)
  const rest = [check('suspect 1', SUSPECT), check('clean 1', CLEAN), check('clean 2', CLEAN), check('clean 3', CLEAN), check('known 1', KNOWN)]
  t.same(pool.waiting, [1, 2, 2], 'clean 3 spilled into the suspect lane')
  await t.rejects(pool.verify(stored, 's', SUSPECT), { code: 'overloaded' })
  await Promise.all([first, ...rest])
  t.same(order, ['first', 'known 1', 'clean 1', 'clean 2', 'suspect 1', 'clean 3'])
})

t.test('checks hold at most `threads` of libuv\'s pool: other work on it is not queued behind a burst of logins', async t => {
  const pool = new ScryptPool({ threads: 1, queue: 8 })
  const stored = await pool.hash('s')
  const order: string[] = []
  const logins = Array.from({ length: 6 }, (_, i) => pool.verify(stored, 's').then(() => { order.push(`login ${i}`) }))
  // fs.stat runs on libuv's pool too; with six hashes on its four threads it would wait for one to end.
  const stat = fs.stat(fileURLToPath(import.meta.url)).then(() => { order.push('stat') })
  await Promise.all([...logins, stat])
  t.equal(order[0], 'stat')
  t.same(order.slice(1), ['login 0', 'login 1', 'login 2', 'login 3', 'login 4', 'login 5'], 'the waiting checks run in arrival order')
})

t.test('a check whose clients all left before its turn is never hashed; one still waited for is', async t => {
  const pool = new ScryptPool({ threads: 1, queue: 4 })
  t.teardown(() => pool.close())
  const stored = await pool.hash('s')
  const busy = pool.verify(stored, 'x')
  const gone = new AbortController()
  const abandoned = pool.verify(stored, 's', CLEAN, gone.signal)
  gone.abort()
  await t.rejects(abandoned, /abandoned/)
  t.equal(await busy, false)
  t.equal(await pool.verify(stored, 's'), true)
})
