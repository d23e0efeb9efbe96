import t from 'tap'
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { tailBus } from '../helpers/child.js'
import { recordFigures } from '../helpers/figures.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { privateInfra, type PrivateInfra } from '../helpers/infra.js'
import { eventually } from '../helpers/http.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence } from '../helpers/multipart.js'
import { metric, partialUpload, within } from '../helpers/uploads.js'
import { objectKeys, openUploads, s3Client } from '../helpers/s3.js'

const MiB = 1024 * 1024

/** A gateway on a MinIO of this test alone, with short deadlines and a fast sweep. */
async function setup (t: any) {
  const infra = await privateInfra(t, { kafka: false })
  if (!infra) return undefined
  const bucket = `faults-${randomUUID()}`
  const gw = await startTestGateway(t, {
    STORAGE: 's3', S3_ENDPOINT: infra.env.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_PART_SIZE: String(5 * MiB),
    S3_REQUEST_TIMEOUT_MS: '1000', S3_PART_TIMEOUT_MS: '2000', S3_SWEEP_INTERVAL_MS: '500'
  })
  const token = await login(gw.url)
  return { ...gw, infra, bucket, token, s3: s3Client(infra.env), port: Number(new URL(gw.url).port) }
}

/** A 20 MiB clip of which 12 MiB are sent: two parts stored, the multipart upload open, the rest held back. */
async function openUpload (s: NonNullable<Awaited<ReturnType<typeof setup>>>, eventId: string) {
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: eventId })), mediaPart(clip(20 * MiB).data)])
  const upload = await partialUpload(s.port, s.token, body, body.length - 8 * MiB)
  const [key] = await eventually(() => openUploads(s.s3, s.bucket), open => open.length === 1)
  if (key === undefined) throw new Error('no multipart upload was opened')
  return { ...upload, key }
}

async function uploadsUnder (s: { s3: ReturnType<typeof s3Client>, bucket: string }, key: string): Promise<string[]> {
  const { Uploads } = await s.s3.send(new ListMultipartUploadsCommand({ Bucket: s.bucket, Prefix: key }))
  return (Uploads ?? []).map(u => u.UploadId!)
}

async function thawed (infra: PrivateInfra, t: any): Promise<void> {
  await infra.freezeMinio()
  t.teardown(() => infra.thawMinio().catch(() => undefined))
}

t.test('a frozen object store: the upload is answered 503 within its deadlines, its slabs come back, and after the thaw nothing is left', async t => {
  const s = await setup(t)
  if (!s) return
  const upload = await openUpload(s, 'evt-frozen')
  t.teardown(() => upload.socket.destroy())
  await thawed(s.infra, t)
  upload.sendRest()

  const res = await within(upload.response, 30_000, 'an answer while the store is frozen')
  t.equal(res.status, 503)
  t.match(res.body, { status: 'error', code: 'storage_unavailable', details: { media: /did not answer within \d+ ms/ } })
  t.match(res.headers['retry-after'], /^\d+$/)
  t.equal(await metric(s.url, 'gateway_evidence_buffer_in_use_bytes'), 0, 'the upload\'s slabs are back in the pool')
  t.ok(await metric(s.url, 'gateway_storage_multipart_uploads_unresolved') >= 1, 'its multipart upload stays recorded: the abort could not reach the store')

  await s.infra.thawMinio()
  const next = await postEvidence(s.url, s.token, multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-after-thaw' })), mediaPart(clip(12 * MiB).data)]))
  t.same([next.status, next.body], [202, { status: 'accepted', event_id: 'evt-after-thaw', media_count: 1 }], 'the next upload works')
  t.equal(await eventually(() => metric(s.url, 'gateway_storage_multipart_uploads_unresolved'), v => v === 0), 0, 'the sweep resolved the record')
  t.same(await uploadsUnder(s, upload.key), [], 'no multipart upload left under the frozen upload\'s key')
  t.same(await openUploads(s.s3, s.bucket), [])
  t.equal((await objectKeys(s.s3, s.bucket)).length, 1, 'only the object of the upload that completed')
  const retry = await postEvidence(s.url, s.token, multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-frozen' })), mediaPart(clip(MiB).data)]))
  t.equal(retry.status, 202, 'the failed event_id was released')
  const published = await eventually(() => tailBus(s.dataDir, 'stream.events.v1'), m => m.length >= 2)
  t.same(published.map(m => m.value.event_id).sort(), ['evt-after-thaw', 'evt-frozen'], 'published: the upload after the thaw and the retry, nothing of the frozen attempt')
  recordFigures('faults', 'MinIO frozen (SIGSTOP) mid-upload, then thawed', {
    sent: 3, acknowledged: 2, found_downstream: published.length, duplicates: published.length - new Set(published.map(m => m.value.event_id)).size,
    left_in_storage: (await openUploads(s.s3, s.bucket)).length + (await objectKeys(s.s3, s.bucket)).length - 2, faults_injected: 1, answered_5xx: [res, next, retry].filter(r => r.status >= 500).length
  })
})

t.test('MinIO killed mid-upload: 5xx, and once it is back the sweep leaves no incomplete upload', async t => {
  const s = await setup(t)
  if (!s) return
  const upload = await openUpload(s, 'evt-killed')
  t.teardown(() => upload.socket.destroy())
  await s.infra.killMinio()
  upload.sendRest()

  const res = await within(upload.response, 30_000, 'an answer while the store is down')
  t.equal(res.status, 503)
  t.match(res.body, { status: 'error', code: 'storage_unavailable' })
  t.equal(await metric(s.url, 'gateway_evidence_buffer_in_use_bytes'), 0)
  t.ok(await metric(s.url, 'gateway_storage_multipart_uploads_unresolved') >= 1, 'the upload is recorded while its abort fails')

  await s.infra.startMinio()
  t.equal(await eventually(() => metric(s.url, 'gateway_storage_multipart_uploads_unresolved'), v => v === 0, 40_000), 0, 'the sweep resolved the record once MinIO was back')
  t.ok(await metric(s.url, 'gateway_storage_multipart_aborts_retried_total') >= 1, 'by retrying the abort')
  t.same(await uploadsUnder(s, upload.key), [], 'ListMultipartUploads shows nothing for the key')
  t.same(await objectKeys(s.s3, s.bucket), [], 'no object')
  const published = await tailBus(s.dataDir, 'stream.events.v1')
  t.same(published, [], 'nothing published')
  recordFigures('faults', 'MinIO killed (-9) mid-upload, then restarted', {
    sent: 1, acknowledged: 0, found_downstream: published.length, duplicates: 0,
    left_in_storage: (await openUploads(s.s3, s.bucket)).length + (await objectKeys(s.s3, s.bucket)).length, faults_injected: 1, answered_5xx: res.status >= 500 ? 1 : 0
  })
})
