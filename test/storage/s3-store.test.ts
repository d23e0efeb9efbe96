import t from 'tap'
import { CreateBucketCommand, CreateMultipartUploadCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3'
import { spawn } from 'node:child_process'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { Readable } from 'node:stream'
import { loadConfig } from '../../src/config/index.js'
import { Incarnation, openState, type StateStore } from '../../src/state/index.js'
import { createObjectStore, soleOwner, type ObjectStore } from '../../src/storage/index.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { objectKeys, openUploads, s3Client, sha256Of } from '../helpers/s3.js'

const MiB = 1024 * 1024
const live = (): AbortSignal => new AbortController().signal
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

/** A state environment of the test's own; `close` after the stores using it have stopped. */
function tempState (): { state: StateStore, close: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), 's3-store-'))
  const state = openState(dir)
  return { state, close: async () => { await state.close(); rmSync(dir, { recursive: true, force: true }) } }
}

async function setup (t: any, env: Record<string, string> = {}, shared?: StateStore) {
  const infra = sharedInfra(t)
  if (!infra) return undefined
  const own = shared === undefined ? tempState() : undefined
  const state = shared ?? own!.state
  const bucket = env['S3_BUCKET'] ?? `store-${randomUUID()}`
  const config = loadConfig({
    STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_REGION: infra.AWS_REGION,
    S3_PART_SIZE: String(5 * MiB), S3_QUEUE_SIZE: '2', ...env
  })
  const store: ObjectStore = createObjectStore(config, state, soleOwner())
  await store.start()
  t.teardown(async () => { await store.stop?.(); await own?.close() })
  return { store, bucket, state, s3: s3Client(infra) }
}

t.test('objects of every shape arrive whole: empty, one slab, an exact multiple of the part size, parts plus a rest', async t => {
  const s = await setup(t)
  if (!s) return
  for (const size of [0, 1234, 10 * MiB, 11 * MiB + 7]) {
    const data = randomBytes(size)
    const stored = await s.store.put(`k/${size}.mp4`, Readable.from([data]), 'video/mp4', { signal: live() })
    t.same([stored.key, stored.size, stored.uri], [`k/${size}.mp4`, size, `s3://${s.bucket}/k/${size}.mp4`])
    t.ok(stored.etag.length > 0, `${size}: an ETag`)
    t.equal(await sha256Of(s.s3, stored.uri), sha(data), `${size} bytes read back identical`)
  }
  t.same(await openUploads(s.s3, s.bucket), [], 'no multipart upload left open')
})

t.test('uploads that share a one-part budget all complete', async t => {
  const s = await setup(t, { STORAGE_BUFFER_BYTES: String(5 * MiB), STORAGE_CLIENT_MAX_UPLOADS: '3' })
  if (!s) return
  const files = [randomBytes(11 * MiB), randomBytes(6 * MiB), randomBytes(MiB)]
  const stored = await Promise.all(files.map((f, i) => s.store.put(`shared/${i}`, Readable.from([f.subarray(0, 3 * MiB), f.subarray(3 * MiB)]), 'video/mp4', { signal: live() })))
  for (const [i, o] of stored.entries()) t.equal(await sha256Of(s.s3, o.uri), sha(files[i]!), `object ${i}`)
})

t.test('an upload aborted after its first part leaves no multipart upload and no object', async t => {
  const s = await setup(t)
  if (!s) return
  const ac = new AbortController()
  const body = new Readable({ read () {} })
  body.push(randomBytes(6 * MiB))
  const put = s.store.put('gone.mp4', body, 'video/mp4', { signal: ac.signal })
  t.equal((await eventually(() => openUploads(s.s3, s.bucket), open => open.length === 1)).length, 1, 'the first part opened a multipart upload')
  ac.abort(new Error('client disconnected'))
  await t.rejects(put, { message: 'client disconnected' })
  t.same(await openUploads(s.s3, s.bucket), [], 'ListMultipartUploads is empty')
  t.same(await objectKeys(s.s3, s.bucket), [])
})


t.test('an aborted upload leaves its record resolved: nothing in flight, nothing waiting for the sweep', async t => {
  const s = await setup(t)
  if (!s) return
  const ac = new AbortController()
  const body = new Readable({ read () {} })
  body.push(randomBytes(6 * MiB))
  const put = s.store.put('recorded.mp4', body, 'video/mp4', { signal: ac.signal })
  await eventually(async () => s.store.multipart!.inFlight, n => n === 1)
  t.equal(s.store.multipart!.inFlight, 1, 'the upload is recorded while in flight')
  ac.abort(new Error('client disconnected'))
  await t.rejects(put)
  t.same([s.store.multipart!.inFlight, s.store.multipart!.backlog], [0, 0])
  const done = await s.store.put('done.mp4', Readable.from([randomBytes(11 * MiB)]), 'video/mp4', { signal: live() })
  t.ok(done.etag.endsWith('-3"'), 'a multipart upload')
  t.same([s.store.multipart!.inFlight, s.store.multipart!.backlog], [0, 0], 'a completed upload leaves no record')
})

t.test('at start, the sweep aborts the uploads an earlier process recorded, by their id; one whose create was never answered is counted and left to the lifecycle rule', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const bucket = `store-${randomUUID()}`
  const { state, close } = tempState()
  t.teardown(close)
  const first = await setup(t, { S3_BUCKET: bucket }, state)
  if (!first) return
  // What a process killed mid-upload leaves: a recorded upload with its id,
  // and one whose create was sent but whose answer never came back.
  const known = await first.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'a/known.mp4' }))
  await first.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'a/lost.mp4' }))
  await first.s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: 'a/not-ours.mp4' }))
  const journal = state.openDB({ name: 'storage-multipart-uploads' })
  await journal.put('dead-1', { bucket, key: 'a/known.mp4', upload_id: known.UploadId, started_at: Date.now(), incarnation: 'dead' })
  await journal.put('dead-2', { bucket, key: 'a/lost.mp4', started_at: Date.now(), incarnation: 'dead' })
  await first.store.stop?.()

  const second = await setup(t, { S3_BUCKET: bucket }, state)
  if (!second) return
  await eventually(async () => second.store.multipart!.backlog, n => n === 0)
  t.equal(second.store.multipart!.backlog, 0, 'both records resolved')
  t.ok(second.store.multipart!.abortsRetried >= 2, 'counted as aborts retried')
  t.equal(second.store.multipart!.unidentified, 1, 'the one without an id counted as unidentified')
  t.same(await uploadIds(second.s3, bucket, 'a/known.mp4'), [], 'the recorded upload id was aborted')
  t.same((await openUploads(second.s3, bucket)).sort(), ['a/lost.mp4', 'a/not-ours.mp4'], 'an upload whose id was never learnt is not touched (the key alone does not say whose it is), nor one the gateway never recorded')
})

/**
 * A worker beside the test on the same DATA_DIR (its own incarnation): it
 * stores `key` from a body of which it sends the first 6 MiB (a part: the
 * multipart upload is open), then the rest once told to on stdin, and
 * prints the outcome.
 */
const SIBLING = `
const [stateUrl, storageUrl, configUrl, dir, env, key] = process.argv.slice(1)
const { createHash, randomBytes } = await import('node:crypto')
const { createInterface } = await import('node:readline')
const { Readable } = await import('node:stream')
const { openState, Incarnation } = await import(stateUrl)
const { createObjectStore } = await import(storageUrl)
const { loadConfig } = await import(configUrl)
const state = openState(dir)
const me = await Incarnation.start(state)
const store = createObjectStore(loadConfig(JSON.parse(env)), state, me)
await store.start()
const data = randomBytes(7 * 1024 * 1024)
const body = new Readable({ read () {} })
body.push(data.subarray(0, 6 * 1024 * 1024))
const put = store.put(key, body, 'video/mp4', { signal: new AbortController().signal })
createInterface({ input: process.stdin }).once('line', () => { body.push(data.subarray(6 * 1024 * 1024)); body.push(null) })
console.log(JSON.stringify({ incarnation: me.id }))
const outcome = await put.then(stored => ({ stored, sha256: createHash('sha256').update(data).digest('hex') }), err => ({ error: String(err) }))
console.log(JSON.stringify(outcome))
await store.stop()
await me.stop()
await state.close()
`

async function uploadIds (s3: ReturnType<typeof s3Client>, bucket: string, key: string): Promise<string[]> {
  const { Uploads } = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: key }))
  return (Uploads ?? []).filter(u => u.Key === key).map(u => u.UploadId!).sort()
}

t.test('a sweep at start beside a live upload of the same key on a sibling process aborts only the recorded upload, by its id', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const bucket = `store-${randomUUID()}`
  const dir = t.testdir()
  const env = { STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_REGION: infra.AWS_REGION, S3_PART_SIZE: String(5 * MiB) }
  const key = 'tenant/2026/11/28/evt-retried/0.mp4'
  const s3 = s3Client(infra)
  await s3.send(new CreateBucketCommand({ Bucket: bucket }))
  const dead = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key }))

  const dist = (path: string): string => new URL(`../../dist/${path}`, import.meta.url).href
  const sibling = spawn(process.execPath, ['--input-type=module', '-e', SIBLING, dist('state/index.js'), dist('storage/index.js'), dist('config/index.js'), dir, JSON.stringify(env), key], { stdio: ['pipe', 'pipe', 'inherit'] })
  t.teardown(() => { if (sibling.exitCode === null) sibling.kill('SIGKILL') })
  const lines = createInterface({ input: sibling.stdout! })[Symbol.asyncIterator]()
  await lines.next()
  const open = await eventually(() => uploadIds(s3, bucket, key), ids => ids.length === 2)
  const live = open.find(id => id !== dead.UploadId)!
  t.ok(live, 'the sibling\'s upload of the same key is open beside the dead one')
  // An earlier attempt at the same event, by a process that has since died: the
  // upload it created, and a create it never heard back from. (Recorded once
  // the sibling has swept at its own start, which would take them.)
  const state = openState(dir)
  t.teardown(() => state.close())
  const journal = state.openDB({ name: 'storage-multipart-uploads' })
  await journal.put('dead-1', { bucket, key, upload_id: dead.UploadId, started_at: Date.now(), incarnation: 'dead' })
  await journal.put('dead-2', { bucket, key, started_at: Date.now(), incarnation: 'dead' })

  const me = await Incarnation.start(state)
  t.teardown(() => me.stop())
  const store = createObjectStore(loadConfig(env), state, me)
  await store.start()
  t.teardown(() => store.stop?.())
  await eventually(async () => store.multipart!.backlog, n => n === 0)
  t.same(await uploadIds(s3, bucket, key), [live], 'the sweep aborted the dead upload by its id, and nothing else under the key')

  sibling.stdin!.write('finish\n')
  const outcome = JSON.parse((await lines.next()).value as string) as { stored?: { uri: string }, sha256?: string, error?: string }
  t.notOk(outcome.error, 'the sibling\'s upload completed')
  t.equal(await sha256Of(s3, outcome.stored!.uri), outcome.sha256, 'whole')
  t.same(await uploadIds(s3, bucket, key), [], 'and nothing is left open under the key')
})
