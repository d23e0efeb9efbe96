import t from 'tap'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import { loadConfig } from '../../src/config/index.js'
import { createObjectStore, type ObjectStore } from '../../src/storage/index.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { objectKeys, openUploads, s3Client, sha256Of } from '../helpers/s3.js'

const MiB = 1024 * 1024
const live = (): AbortSignal => new AbortController().signal
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

async function setup (t: any, env: Record<string, string> = {}) {
  const infra = sharedInfra(t)
  if (!infra) return undefined
  const bucket = `store-${randomUUID()}`
  const config = loadConfig({
    STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_REGION: infra.AWS_REGION,
    S3_PART_SIZE: String(5 * MiB), S3_QUEUE_SIZE: '2', ...env
  })
  const store: ObjectStore = createObjectStore(config)
  await store.start()
  return { store, bucket, s3: s3Client(infra) }
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
  const s = await setup(t, { STORAGE_BUFFER_BYTES: String(5 * MiB) })
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

