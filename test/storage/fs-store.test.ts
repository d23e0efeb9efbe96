import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { FsObjectStore, SlabPool } from '../../src/storage/index.js'

async function setup (t: any, slabSize = 1024) {
  const dataDir = mkdtempSync(join(tmpdir(), 'fs-store-'))
  t.teardown(() => import('node:fs/promises').then(fs => fs.rm(dataDir, { recursive: true, force: true })))
  const store = new FsObjectStore(dataDir, new SlabPool(slabSize, 2), 2)
  await store.start()
  return { store, root: join(dataDir, 'objects') }
}

t.test('an object written part by part at its offsets reads back whole under its key', async t => {
  const { store, root } = await setup(t)
  const data = randomBytes(10 * 1024 + 77)
  const stored = await store.put('tenant/evt/0.mp4', Readable.from([data.subarray(0, 5000), data.subarray(5000)]), 'video/mp4', { signal: new AbortController().signal })
  t.same([stored.key, stored.size, stored.etag], ['tenant/evt/0.mp4', data.length, ''])
  t.equal(stored.uri, `file://${join(root, 'tenant/evt/0.mp4')}`)
  t.ok(readFileSync(join(root, 'tenant/evt/0.mp4')).equals(data))
  t.same(readdirSync(join(root, 'tenant/evt')), ['0.mp4'], 'no temporary file left beside it')
})

t.test('an aborted write leaves neither the object nor its temporary file', async t => {
  const { store, root } = await setup(t)
  const ac = new AbortController()
  const body = new Readable({ read () {} })
  body.push(randomBytes(3000))
  const put = store.put('tenant/evt/1.mp4', body, 'video/mp4', { signal: ac.signal })
  setTimeout(() => ac.abort(new Error('client disconnected')), 20)
  await t.rejects(put, { message: 'client disconnected' })
  t.same(readdirSync(join(root, 'tenant/evt')), [])
})
