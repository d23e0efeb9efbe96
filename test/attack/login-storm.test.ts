import t from 'tap'
import { randomBytes } from 'node:crypto'
import { describeFigures, failures, measure, sendFrom } from './support/storm.js'
import { DEVICE, INGEST_AUDIENCE, READER, startTarget } from './support/target.js'
import type { RawRequest } from './support/wire.js'

/**
 * Row 8 of issue 38: failing logins with random secrets from 150 addresses
 * filled the one hash queue, and 99.5% of logins were 503, an honest first
 * login included. Now a client known from its network waits in a lane of
 * its own, a network without failures in another, and the failures queue
 * behind both. The secret cache is off, so every honest login costs a hash
 * too and has to win its place.
 */
const ATTACK_MS = 12_000
/** 150 addresses, each a network (an IPv4 /24) of its own, all in one /16 of loopback; two logins in flight each. */
const NETWORKS = 150
const PER_NETWORK = 1
const IN_FLIGHT = 2
/** An attacker gives up on a guess after this (counted as `hang`): the suspect lane is served last, for as long as anyone else waits. */
const ATTACKER_PATIENCE_MS = 5_000

const login = (clientId: string, secret: string): RawRequest => ({
  method: 'POST',
  target: '/api/v1/login',
  headers: [['Content-Type', 'application/json']],
  body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret, audience: INGEST_AUDIENCE })
})

t.test('a storm of failing logins from 150 addresses: a known client and first logins from other networks are served', async t => {
  const target = await startTarget(t, { AUTH_SECRET_CACHE_S: '0' })
  const first = await sendFrom(target.port, login(DEVICE.client_id, DEVICE.client_secret), '127.0.0.1')
  t.equal(first.kind === 'answer' && first.status, 200, 'the known client logged in once before the storm')

  let over = false
  const storm: Record<string, number> = {}
  const attackers: Array<Promise<void>> = []
  for (let n = 0; n < NETWORKS; n++) {
    for (let a = 1; a <= PER_NETWORK; a++) {
      for (let k = 0; k < IN_FLIGHT; k++) {
        attackers.push((async () => {
          while (!over) {
            const clientId = Math.random() < 0.5 ? DEVICE.client_id : `ghost-${randomBytes(4).toString('hex')}`
            const outcome = await sendFrom(target.port, login(clientId, randomBytes(16).toString('base64url')), `127.3.${n}.${a}`, ATTACKER_PATIENCE_MS)
            const key = outcome.kind === 'answer' ? String(outcome.status) : outcome.kind
            storm[key] = (storm[key] ?? 0) + 1
          }
        })())
      }
    }
  }
  // Let the storm fill whatever it can before the honest clients come.
  await new Promise(resolve => setTimeout(resolve, 1000))
  let network = 0
  const figures = await measure([
    { name: 'known client (logged in from its network before)', port: target.port, request: () => login(DEVICE.client_id, DEVICE.client_secret), from: () => '127.0.0.1' },
    { name: 'first login (each from a network never seen)', port: target.port, request: () => login(READER.client_id, READER.client_secret), from: () => `127.4.${network++ % 250}.1` }
  ], new Promise(resolve => setTimeout(resolve, ATTACK_MS)), 200)
  over = true
  await Promise.all(attackers)
  for (const f of figures) t.comment(`honest during the storm: ${describeFigures(f)}`)
  t.comment(`storm: ${Object.entries(storm).map(([s, n]) => `${n} × ${s}`).join(', ')}`)
  const [known, fresh] = figures as [typeof figures[0], typeof figures[0]]
  t.same(failures(known, [200]), {}, 'every login of the known client answered 200')
  t.same(failures(fresh, [200]), {}, 'every first login from a network without failures answered 200')
  t.ok((storm['401'] ?? 0) > 0, 'the storm\'s guesses were hashed and refused 401 (it did reach the hash queue)')
  t.same(Object.keys(storm).filter(s => !['401', '429', '503', 'hang'].includes(s)), [], 'the storm got 401, 429 or 503, or gave up waiting; nothing else')
  t.equal(await target.alive(), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
})
