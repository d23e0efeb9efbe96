import t from 'tap'
import { randomUUID } from 'node:crypto'
import { createServer, connect, type Socket } from 'node:net'
import { Upload } from 'tus-js-client'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, CLIENT } from '../helpers/gateway.js'
import { sharedInfra } from '../helpers/infra.js'
import { consume } from '../helpers/kafka.js'
import { baseEnvelope, clip } from '../helpers/multipart.js'
import { eventually } from '../helpers/http.js'
import { gatewayKeys, objectKeys, openUploads, s3Client, sha256Of } from '../helpers/s3.js'
import { commitEvent, create, head, patch, terminate, uploadUrl } from '../helpers/tus.js'

const MiB = 1024 * 1024
const PART = 5 * MiB

async function setup (t: any, env: Record<string, string> = {}) {
  const infra = sharedInfra(t)
  if (!infra) return undefined
  const bucket = `tus-${randomUUID()}`
  const topic = `evidence-${randomUUID()}`
  const gw = await startTestGateway(t, {
    ROLES: 'auth,ingest', STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_PART_SIZE: String(PART),
    BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_EVIDENCE: topic, ...env
  })
  const token = await login(gw.url)
  return { ...gw, infra, bucket, topic, token, s3: s3Client(infra) }
}

/**
 * A TCP proxy to `port` that cuts every connection once `cutAfter` bytes
 * have gone from the client to the server: a link that drops. How many it cut.
 */
async function droppingProxy (t: any, port: number, cutAfter: number): Promise<{ port: number, cuts: () => number }> {
  let cuts = 0
  const sockets = new Set<Socket>()
  const server = createServer(client => {
    const upstream = connect(port, '127.0.0.1')
    sockets.add(client).add(upstream)
    let sent = 0
    const cut = (): void => { client.destroy(); upstream.destroy() }
    client.on('data', chunk => {
      sent += chunk.length
      if (sent > cutAfter) {
        cuts++
        upstream.write(chunk.subarray(0, chunk.length - (sent - cutAfter)), cut)
        client.pause()
        return
      }
      if (!upstream.write(chunk)) client.pause()
    })
    upstream.on('drain', () => { if (sent <= cutAfter) client.resume() })
    upstream.on('data', chunk => client.write(chunk))
    client.on('close', cut).on('error', cut)
    upstream.on('close', cut).on('error', cut)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const s of sockets) s.destroy(); server.close() })
  return { port: (server.address() as { port: number }).port, cuts: () => cuts }
}

t.test('tus-js-client, unmodified, uploads 64 MB through a link that drops every 12 MB; it resumes by itself, and the committed event\'s SHA-256 and object are the file\'s', async t => {
  const s = await setup(t)
  if (!s) return
  const proxy = await droppingProxy(t, s.gateway.port!, 12 * MiB)
  const file = clip(64 * MiB)
  let resumed = 0
  const url = await new Promise<string>((resolve, reject) => {
    const upload = new Upload(file.data, {
      endpoint: `http://127.0.0.1:${proxy.port}/v1/stream/uploads`,
      headers: { authorization: `Bearer ${s.token}` },
      metadata: { filetype: 'video/mp4', filename: 'clip.mp4' },
      retryDelays: Array(40).fill(100),
      onShouldRetry: () => { resumed++; return true },
      onError: reject,
      onSuccess: () => resolve(upload.url!)
    })
    upload.start()
  })
  t.ok(proxy.cuts() >= 4, `the proxy cut the upload ${proxy.cuts()} times`)
  t.ok(resumed >= 4, `the client resumed ${resumed} times`)
  const location = new URL(url).pathname
  const at = await head(`${s.url}${location}`, s.token)
  t.equal(at.headers.get('upload-offset'), String(file.data.length), 'the upload is whole')
  t.same(await openUploads(s.s3, s.bucket), [], 'its multipart upload is completed')

  const committed = await commitEvent(s.url, s.token, baseEnvelope({ event_id: 'evt-tus-js', media: [{ upload_url: url, checksum_sha256: file.sha256 }] }))
  t.same([committed.status, committed.body], [202, { status: 'accepted', event_id: 'evt-tus-js', media_count: 1 }])
  const [message] = await consume(s.infra.KAFKA_BROKERS, s.topic, 1)
  t.equal(message!.key, `${CLIENT.client_id}/cam-3`)
  const media = JSON.parse(message!.value).media
  t.match(media, [{ index: 0, content_type: 'video/mp4', size_bytes: file.data.length, sha256: file.sha256 }])
  t.equal(media[0].uri, `s3://${s.bucket}/${CLIENT.client_id}/uploads/${location.split('/').pop()}.mp4`)
  t.equal(await sha256Of(s.s3, media[0].uri), file.sha256, 'the object is the file')
})

t.test('termination aborts the S3 multipart upload and removes the record', async t => {
  const s = await setup(t)
  if (!s) return
  const ended = uploadUrl(s.url, await create(s.url, s.token, 2 * PART))
  t.equal((await patch(ended, s.token, 0, clip(PART).data)).headers.get('upload-offset'), String(PART))
  t.equal((await openUploads(s.s3, s.bucket)).length, 1)
  t.equal((await gatewayKeys(s.s3, s.bucket, 'uploads/')).length, 1, 'with STORAGE=s3 and BUS=kafka the record is in the bucket, for every node')
  t.equal((await terminate(ended, s.token)).status, 204)
  t.same(await openUploads(s.s3, s.bucket), [], 'termination aborted its multipart upload')
  t.same(await gatewayKeys(s.s3, s.bucket, 'uploads/'), [], 'and removed its record')
})

t.test('expiry: the sweep aborts the S3 multipart upload of an unfinished upload, deletes the object of a finished one, and removes both records', async t => {
  const s = await setup(t, { EVIDENCE_UPLOAD_EXPIRES_S: '1', S3_SWEEP_INTERVAL_MS: '200' })
  if (!s) return
  const open = uploadUrl(s.url, await create(s.url, s.token, 2 * PART))
  await patch(open, s.token, 0, clip(PART).data)
  await create(s.url, s.token, 1000, {}, clip(1000).data)
  await eventually(() => gatewayKeys(s.s3, s.bucket, 'uploads/'), keys => keys.length === 0, 15_000)
  t.pass('the records are gone')
  t.same(await openUploads(s.s3, s.bucket), [], 'the unfinished one\'s multipart upload is aborted')
  t.same(await objectKeys(s.s3, s.bucket), [], 'the finished one\'s object is deleted')
})
