import t from 'tap'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { until } from '../helpers/http.js'
import { FsObjectStore, SlabPool, type ProcessOwner } from '../../src/storage/index.js'

async function setup (t: any, slabSize = 1024, owner?: ProcessOwner) {
  const dataDir = mkdtempSync(join(tmpdir(), 'fs-store-'))
  t.teardown(() => import('node:fs/promises').then(fs => fs.rm(dataDir, { recursive: true, force: true })))
  const store = new FsObjectStore(dataDir, new SlabPool(slabSize, 2), 2, owner)
  await store.start()
  return { store, root: join(dataDir, 'objects'), dataDir }
}

/** Every folder under `root` and whether it is empty, as paths relative to it. */
function folders (root: string): Array<[string, boolean]> {
  return readdirSync(root, { recursive: true, withFileTypes: true }).filter(d => d.isDirectory())
    .map(d => join(d.parentPath, d.name)).map(p => [p.slice(root.length + 1), readdirSync(p).length === 0] as [string, boolean]).sort()
}

t.test('an object written part by part at its offsets reads back whole under its key', async t => {
  const { store, root } = await setup(t)
  const data = randomBytes(10 * 1024 + 77)
  const stored = await store.put('tenant/evt/0.mp4', Readable.from([data.subarray(0, 5000), data.subarray(5000)]), 'video/mp4', { signal: new AbortController().signal })
  t.same([stored.key, stored.size, stored.etag], ['tenant/evt/0.mp4', data.length, ''])
  t.equal(stored.uri, `file://${join(root, 'tenant/evt/0.mp4')}`)
  t.ok(readFileSync(join(root, 'tenant/evt/0.mp4')).equals(data))
  t.same(readdirSync(join(root, 'tenant/evt')), ['0.mp4'], 'no temporary file left beside it')
  t.same(readdirSync(join(root, '.partial')), [], 'nor in the partial folder')
})

t.test('an aborted write leaves neither the object nor its temporary file', async t => {
  const { store, root } = await setup(t)
  const ac = new AbortController()
  const body = new Readable({ read () {} })
  body.push(randomBytes(3000))
  const put = store.put('tenant/evt/1.mp4', body, 'video/mp4', { signal: ac.signal })
  // Aborted once a part is written, so there is a partial file to remove.
  await until(() => readdirSync(join(root, '.partial')).length === 1)
  ac.abort(new Error('client disconnected'))
  await t.rejects(put, { message: 'client disconnected' })
  t.same(readdirSync(join(root, '.partial')), [], 'no partial file')
  t.notOk(existsSync(join(root, 'tenant')), 'and no folder: an object\'s folders are made when it is complete')
})

t.test('a client past its uploads is refused and leaves no partial file behind', async t => {
  const dataDir = t.testdir()
  const store = new FsObjectStore(dataDir, new SlabPool(1024, 2, { uploadsPerTenant: 1 }), 2)
  await store.start()
  const partials = (): string[] => readdirSync(join(dataDir, 'objects', '.partial'))
  const stalled = new Readable({ read () {} })
  stalled.push(randomBytes(3000))
  const ac = new AbortController()
  const holding = store.put('tenant/evt/a.mp4', stalled, 'video/mp4', { signal: ac.signal, tenant: 'cam' })
  await until(() => partials().length === 1)
  await t.rejects(store.put('tenant/evt/b.mp4', Readable.from([randomBytes(10)]), 'video/mp4', { signal: new AbortController().signal, tenant: 'cam' }), { code: 'storage_busy' })
  t.equal(partials().length, 1, 'only the upload being stored has a partial file')
  ac.abort(new Error('client disconnected'))
  await t.rejects(holding)
  t.same(partials(), [], 'and none is left once it failed')
})

t.test('while an object is written its partial file is named after the writing process', async t => {
  const owner: ProcessOwner = { id: 'me-1', isAlive: id => id === 'me-1' }
  const { store, root } = await setup(t, 1024, owner)
  const body = new Readable({ read () {} })
  body.push(randomBytes(3000))
  const put = store.put('tenant/evt/2.mp4', body, 'video/mp4', { signal: new AbortController().signal })
  await until(() => readdirSync(join(root, '.partial')).length === 1)
  t.match(readdirSync(join(root, '.partial')), [/^me-1\.[0-9a-f]{12}$/])
  body.push(null)
  await put
  t.same(readdirSync(join(root, '.partial')), [])
})

t.test('at start, partial files of processes that are gone are removed, those of live ones kept', async t => {
  const { dataDir, root } = await setup(t)
  writeFileSync(join(root, '.partial', 'dead-1.0123456789ab'), 'x')
  writeFileSync(join(root, '.partial', 'live-1.0123456789ab'), 'x')
  writeFileSync(join(root, '.partial', 'stray'), 'x')
  const store = new FsObjectStore(dataDir, new SlabPool(1024, 1), 1, { id: 'me-2', isAlive: id => id === 'me-2' || id === 'live-1' })
  await store.start()
  t.same(readdirSync(join(root, '.partial')), ['live-1.0123456789ab'])
})

t.test('deleting an object removes the folders it leaves empty, and only those', async t => {
  const { store, root } = await setup(t)
  const put = (key: string) => store.put(key, Readable.from([randomBytes(10)]), 'video/mp4', { signal: new AbortController().signal })
  await put('c1/2026/01/02/evt-a/0.mp4')
  await put('c1/2026/01/02/evt-a/1.mp4')
  await put('c1/2026/01/02/evt-b/0.mp4')
  await store.delete('c1/2026/01/02/evt-a/0.mp4')
  t.ok(existsSync(join(root, 'c1/2026/01/02/evt-a/1.mp4')), 'a folder with an object left stays')
  await store.delete('c1/2026/01/02/evt-a/1.mp4')
  t.same(folders(root), [['.partial', true], ['c1', false], ['c1/2026', false], ['c1/2026/01', false], ['c1/2026/01/02', false], ['c1/2026/01/02/evt-b', false]], 'evt-a went, its day stays for evt-b')
  await store.delete('c1/2026/01/02/evt-b/0.mp4')
  t.same(folders(root), [['.partial', true]], 'the last object takes its whole branch with it, up to the root')
  await store.delete('c1/2026/01/02/evt-b/0.mp4')
  t.pass('deleting what is gone is fine')
})
