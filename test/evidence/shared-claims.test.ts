import t from 'tap'
import { randomUUID } from 'node:crypto'
import pino from 'pino'
import { SharedDocuments } from '../../src/cluster/index.js'
import { loadConfig } from '../../src/config/index.js'
import { SharedClaims, claimKey } from '../../src/evidence/index.js'
import { sharedInfra } from '../helpers/infra.js'

const ack = { status: 'accepted' as const, event_id: 'evt-1', media_count: 0 }
const KEY = claimKey('cam-1', 'evt-1')

async function setup (t: any) {
  const infra = sharedInfra(t)
  if (!infra) return undefined
  process.env['AWS_ACCESS_KEY_ID'] = infra.AWS_ACCESS_KEY_ID
  process.env['AWS_SECRET_ACCESS_KEY'] = infra.AWS_SECRET_ACCESS_KEY
  const config = loadConfig({ STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: `claims-${randomUUID()}`, DATA_DIR: t.testdir() })
  const documents = new SharedDocuments(config)
  await documents.start()
  t.teardown(() => documents.stop())
  const alive = new Set<string>()
  const node = (id: string): SharedClaims => {
    alive.add(id)
    return new SharedClaims(documents, 60_000, { id, isAlive: async other => alive.has(other) }, pino({ level: 'silent' }))
  }
  return { documents, alive, node }
}

t.test('of ten nodes claiming one event_id at once, one gets it', async t => {
  const s = await setup(t)
  if (!s) return
  const nodes = Array.from({ length: 10 }, (_, i) => s.node(`n${i}`))
  const claims = await Promise.all(nodes.map(n => n.claim(KEY)))
  t.equal(claims.filter(c => c.kind === 'claimed').length, 1)
  t.equal(claims.filter(c => c.kind === 'in_progress').length, 9)
})

t.test('done replays on every node; released is free again', async t => {
  const s = await setup(t)
  if (!s) return
  const [a, b] = [s.node('a'), s.node('b')]
  t.same(await a.claim(KEY), { kind: 'claimed' })
  await a.release(KEY)
  t.same((await s.documents.get(`idempotency/cam-1/evt-1.json`))?.value, { state: 'released' }, 'a tombstone, not a delete')
  t.same(await b.claim(KEY), { kind: 'claimed' }, 'a released claim is taken')
  await b.complete(KEY, ack)
  t.same(await a.claim(KEY), { kind: 'replay', ack })
  t.same(await b.claim(KEY), { kind: 'replay', ack })
})

t.test('a dead holder\'s claim is taken over by one node, and the dead one cannot complete over it', async t => {
  const s = await setup(t)
  if (!s) return
  const [dead, b, c] = [s.node('dead'), s.node('b'), s.node('c')]
  t.same(await dead.claim(KEY), { kind: 'claimed' })
  t.same(await b.claim(KEY), { kind: 'in_progress' }, 'held while its holder lives')
  s.alive.delete('dead')
  const takers = await Promise.all([b.claim(KEY), c.claim(KEY)])
  t.same(takers.map(x => x.kind).sort(), ['claimed', 'in_progress'], 'two nodes taking over at once: one wins (If-Match)')
  await dead.complete(KEY, { ...ack, media_count: 9 })
  const record = (await s.documents.get<{ state: string, owner: string }>(`idempotency/cam-1/evt-1.json`))!.value
  t.equal(record.state, 'in_progress', 'the late completion of the taken-for-dead holder did not land')
  t.not(record.owner, 'dead')
})
