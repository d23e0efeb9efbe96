import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { ClientRegistry, credentialGeneration, Revocation, type Client, type ClientStore } from '../../src/auth/index.js'

const client = (hash: string): Client => ({ client_id: 'cam-1', client_secret_hash: hash, audiences: ['a'], scopes: ['s'], tenant: 'cam-1' })

t.test('a token is refused once its client is gone or its secret changed; cached briefly, then read again', async t => {
  let now = 0
  let stored: Client | undefined = client('scrypt$a')
  let reads = 0
  const revocation = new Revocation(async () => { reads++; return stored }, 2_000, () => now)
  const claims = { client_id: 'cam-1', gen: credentialGeneration(stored!) }
  await revocation.check(claims)
  t.equal(revocation.check(claims), undefined, 'cached: answered synchronously')
  t.equal(reads, 1)
  stored = client('scrypt$b')
  t.equal(revocation.check(claims), undefined, 'within the period, the rotation is not seen yet')
  now = 2_000
  await t.rejects(async () => revocation.check(claims), { code: 'unauthorized', message: 'auth_failed:revoked' }, 'rotated')
  await revocation.check({ client_id: 'cam-1', gen: credentialGeneration(stored) })
  stored = undefined
  now = 4_000
  await t.rejects(async () => revocation.check({ client_id: 'cam-1', gen: credentialGeneration(client('scrypt$b')) }), { message: 'auth_failed:revoked' }, 'removed')
  t.equal(revocation.check({ client_id: 'cam-1' }), undefined, 'a token without a generation (issued before they had one) lives out its lifetime')
  t.throws(() => revocation.check({ client_id: 'cam-1', gen: 7 }), { message: 'auth_failed:revoked' })
  t.equal(reads, 3, 'one read per client per period')
})

t.test('generations: the secret hash\'s for a stored client, fixed for a plain-secret file client, never stored', async t => {
  t.not(credentialGeneration(client('scrypt$a')), credentialGeneration(client('scrypt$b')))
  t.notMatch(credentialGeneration(client('scrypt$a')), /scrypt/)
  const puts: Client[] = []
  const store: ClientStore = { get: async () => undefined, list: async () => [], put: async c => { puts.push(c) }, remove: async () => false }
  const registry = new ClientRegistry(store)
  const dir = mkdtempSync(join(tmpdir(), 'revocation-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = join(dir, 'clients.json')
  writeFileSync(file, JSON.stringify([{ client_id: 'plain', client_secret: 's', audiences: ['a'], scopes: ['s'] }]))
  await registry.load(file, pino({ level: 'silent' }), async s => `scrypt$${s}$${Math.random()}`)
  const plain = (await registry.get('plain'))!
  t.equal(credentialGeneration(plain), 'file', 'every process hashes a plain secret with its own salt: the generation cannot be the hash\'s')
  await registry.put({ ...plain, client_secret_hash: 'scrypt$rotated' })
  t.equal(puts[0]!.generation, undefined, 'a rotated file client is stored without the fixed generation')
})
