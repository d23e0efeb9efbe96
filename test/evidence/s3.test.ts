import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, CLIENT } from '../helpers/gateway.js'
import { sharedInfra } from '../helpers/infra.js'
import { consume } from '../helpers/kafka.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence, BOUNDARY } from '../helpers/multipart.js'
import { rawConnect, eventually } from '../helpers/http.js'
import { s3Client, sha256Of, objectKeys, openUploads } from '../helpers/s3.js'

async function setup (t: any) {
  const infra = sharedInfra(t)
  if (!infra) return undefined
  const bucket = `ev-${randomUUID()}`
  const topic = `evidence-${randomUUID()}`
  const gw = await startTestGateway(t, {
    STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_PART_SIZE: String(5 * 1024 * 1024), S3_QUEUE_SIZE: '2',
    BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_EVIDENCE: topic
  })
  const token = await login(gw.url)
  return { ...gw, infra, bucket, topic, token, s3: s3Client(infra) }
}

t.test('several clips go to MinIO (one as a multipart upload); the envelope on Kafka references them', async t => {
  const s = await setup(t)
  if (!s) return
  const clips = [clip(1_000_000), clip(12 * 1024 * 1024 + 123), clip(64_000)]
  const body = multipartBody([
    envelopePart(baseEnvelope({ event_id: 'evt-s3', media: clips.map(c => ({ checksum_sha256: c.sha256 })) })),
    ...clips.map(c => mediaPart(c.data))
  ])
  const res = await postEvidence(s.url, s.token, body)
  t.same([res.status, res.body], [202, { status: 'accepted', event_id: 'evt-s3', media_count: 3 }])

  const [message] = await consume(s.infra.KAFKA_BROKERS, s.topic, 1)
  t.equal(message!.key, `${CLIENT.client_id}/cam-3`)
  const envelope = JSON.parse(message!.value)
  t.equal(envelope.event_id, 'evt-s3')
  t.notOk('data' in envelope, 'no bytes travel on the bus')
  for (const [i, c] of clips.entries()) {
    const m = envelope.media[i]
    t.match(m.uri, new RegExp(`^s3://${s.bucket}/${CLIENT.client_id}/\\d{4}/\\d{2}/\\d{2}/evt-s3/[0-9a-f]{12}/${i}\\.mp4$`), 'under the folder of the attempt that was accepted')
    t.equal(m.size_bytes, c.data.length)
    t.equal(m.sha256, c.sha256)
    t.match(m.etag, /^"[0-9a-f]{32}(-\d+)?"$/, 'the S3 ETag')
    t.equal(await sha256Of(s.s3, m.uri), c.sha256, `object ${i} fetched by its uri matches`)
  }
  t.match(envelope.media[1].etag, /-3"$/, 'the 12 MiB clip went up in three parts')
  t.same(await openUploads(s.s3, s.bucket), [])
})

t.test('a client that disconnects mid-upload leaves no multipart upload, no object, no publish, no claim', async t => {
  const s = await setup(t)
  if (!s) return
  const big = clip(20 * 1024 * 1024)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-abort' })), mediaPart(big.data)])
  const socket = await rawConnect(Number(new URL(s.url).port))
  socket.write(`POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`)
  socket.write(body.subarray(0, 12 * 1024 * 1024))
  const uploads = await eventually(() => openUploads(s.s3, s.bucket), u => u.length > 0)
  t.equal(uploads.length, 1, 'a multipart upload was open while the clip streamed')
  socket.destroy()

  // uWS sees the disconnect once the paused socket is drained by the upload.
  t.same(await eventually(() => openUploads(s.s3, s.bucket), u => u.length === 0), [], 'ListMultipartUploads is empty after the abort')
  t.same(await objectKeys(s.s3, s.bucket), [], 'no object')
  const small = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-abort' })), mediaPart(clip(1000).data)])
  const retry = await eventually(() => postEvidence(s.url, s.token, small), r => r.status !== 409)
  t.equal(retry.status, 202, 'the event_id is not stuck in progress')
  const [message] = await consume(s.infra.KAFKA_BROKERS, s.topic, 1)
  t.equal(JSON.parse(message!.value).media[0].size_bytes, 1000, 'only the completed retry was published')
})

t.test('a checksum mismatch removes the objects already stored', async t => {
  const s = await setup(t)
  if (!s) return
  const a = clip(200_000)
  const b = clip(6 * 1024 * 1024)
  const body = multipartBody([envelopePart(baseEnvelope({ media: [{ checksum_sha256: a.sha256 }, { checksum_sha256: a.sha256 }] })), mediaPart(a.data), mediaPart(b.data)])
  const res = await postEvidence(s.url, s.token, body)
  t.same([res.status, res.body], [400, { status: 'error', code: 'checksum_mismatch', details: { 'media[1]': 'checksum_sha256 does not match the uploaded file' } }])
  t.same(await objectKeys(s.s3, s.bucket), [])
  t.same(await openUploads(s.s3, s.bucket), [])
})
