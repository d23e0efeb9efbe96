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

/**
 * tus-js-client, unmodified, uploads `data` at `endpoint`; the upload's URL,
 * how often it resumed, and the offset each PATCH was acknowledged to. A
 * client that stops progressing fails at `deadlineMs` rather than loop.
 */
async function tusUpload (endpoint: string, token: string, data: Buffer, options: { chunkSize?: number, deadlineMs: number }): Promise<{ url: string, resumed: number, acknowledged: number[] }> {
  let resumed = 0
  const acknowledged: number[] = []
  const url = await new Promise<string>((resolve, reject) => {
    const upload = new Upload(data, {
      endpoint,
      headers: { authorization: `Bearer ${token}` },
      metadata: { filetype: 'video/mp4', filename: 'clip.mp4' },
      ...(options.chunkSize !== undefined ? { chunkSize: options.chunkSize } : {}),
      retryDelays: Array(40).fill(100),
      onShouldRetry: () => { resumed++; return true },
      onChunkComplete: (_size, accepted) => { acknowledged.push(accepted) },
      onError: err => { clearTimeout(deadline); reject(err) },
      onSuccess: () => { clearTimeout(deadline); resolve(upload.url!) }
    })
    const deadline = setTimeout(() => {
      upload.abort().catch(() => undefined)
      reject(new Error(`the upload did not finish within ${options.deadlineMs} ms; acknowledged: ${acknowledged.join(', ')}`))
    }, options.deadlineMs)
    upload.start()
  })
  return { url, resumed, acknowledged }
}

t.test('tus-js-client, unmodified, uploads 64 MB through a link that drops every 12 MB; it resumes by itself, and the committed event\'s SHA-256 and object are the file\'s', async t => {
  const s = await setup(t)
  if (!s) return
  const proxy = await droppingProxy(t, s.gateway.port!, 12 * MiB)
  const file = clip(64 * MiB)
  const { url, resumed } = await tusUpload(`http://127.0.0.1:${proxy.port}/v1/stream/uploads`, s.token, file.data, { deadlineMs: 300_000 })
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

t.test('tus-js-client with a chunkSize of 1 MiB, less than a part: every PATCH is acknowledged whole and the upload finishes, with the file\'s SHA-256 and bytes', async t => {
  const s = await setup(t)
  if (!s) return
  const file = clip(3 * PART + 12345)
  const { url, acknowledged } = await tusUpload(`${s.url}/v1/stream/uploads`, s.token, file.data, { chunkSize: MiB, deadlineMs: 120_000 })
  t.same(acknowledged, Array.from({ length: Math.ceil(file.data.length / MiB) }, (_, i) => Math.min((i + 1) * MiB, file.data.length)), 'each PATCH moved the offset by its whole chunk, none was sent twice')
  t.same(await openUploads(s.s3, s.bucket), [], 'the multipart upload is completed')
  const key = `${CLIENT.client_id}/uploads/${new URL(url).pathname.split('/').pop()}.mp4`
  t.same(await objectKeys(s.s3, s.bucket), [key], 'only the object is left: no tail')
  const committed = await commitEvent(s.url, s.token, baseEnvelope({ event_id: 'evt-tus-chunks', media: [{ upload_url: url, checksum_sha256: file.sha256 }] }))
  t.equal(committed.status, 202, 'the server\'s hash is the file\'s')
  const [message] = await consume(s.infra.KAFKA_BROKERS, s.topic, 1)
  const media = JSON.parse(message!.value).media
  t.match(media, [{ index: 0, size_bytes: file.data.length, sha256: file.sha256 }])
  t.equal(await sha256Of(s.s3, media[0].uri), file.sha256, 'the object is the file')
})

t.test('tus-js-client, unmodified, through a link that drops every 3 MB, less than a part per connection: it finishes', async t => {
  const s = await setup(t)
  if (!s) return
  const proxy = await droppingProxy(t, s.gateway.port!, 3 * MiB)
  const file = clip(3 * PART + 999)
  const { url, resumed } = await tusUpload(`http://127.0.0.1:${proxy.port}/v1/stream/uploads`, s.token, file.data, { deadlineMs: 120_000 })
  t.ok(proxy.cuts() >= 5, `the proxy cut the upload ${proxy.cuts()} times`)
  t.ok(resumed >= 5, `the client resumed ${resumed} times`)
  const at = await head(`${s.url}${new URL(url).pathname}`, s.token)
  t.equal(at.headers.get('upload-offset'), String(file.data.length), 'the upload is whole')
  const committed = await commitEvent(s.url, s.token, baseEnvelope({ event_id: 'evt-tus-3mb', media: [{ upload_url: url, checksum_sha256: file.sha256 }] }))
  t.equal(committed.status, 202, 'the server\'s hash is the file\'s')
  const [message] = await consume(s.infra.KAFKA_BROKERS, s.topic, 1)
  t.equal(await sha256Of(s.s3, JSON.parse(message!.value).media[0].uri), file.sha256, 'the object is the file')
})

t.test('termination aborts the S3 multipart upload and removes the tail and the record', async t => {
  const s = await setup(t)
  if (!s) return
  const ended = uploadUrl(s.url, await create(s.url, s.token, 2 * PART))
  t.equal((await patch(ended, s.token, 0, clip(PART + MiB).data)).headers.get('upload-offset'), String(PART + MiB))
  t.equal((await openUploads(s.s3, s.bucket)).length, 1)
  t.match(await objectKeys(s.s3, s.bucket), [/\/uploads\/[0-9a-f]{32}\.mp4\.tails\/0005242880-[0-9a-f]{16}$/], 'the MiB past the part is a tail object')
  t.equal((await gatewayKeys(s.s3, s.bucket, 'uploads/')).length, 1, 'with STORAGE=s3 and BUS=kafka the record is in the bucket, for every node')
  t.equal((await terminate(ended, s.token)).status, 204)
  t.same(await openUploads(s.s3, s.bucket), [], 'termination aborted its multipart upload')
  t.same(await objectKeys(s.s3, s.bucket), [], 'and removed its tail')
  t.same(await gatewayKeys(s.s3, s.bucket, 'uploads/'), [], 'and removed its record')
})

t.test('expiry: the sweep aborts the S3 multipart upload of an unfinished upload and deletes its tail, deletes the object of a finished one, and removes both records', async t => {
  // Long enough for the PATCH to end before the upload expires, on a busy machine too.
  const s = await setup(t, { EVIDENCE_UPLOAD_EXPIRES_S: '10', S3_SWEEP_INTERVAL_MS: '200' })
  if (!s) return
  const open = uploadUrl(s.url, await create(s.url, s.token, 2 * PART))
  const kept = await patch(open, s.token, 0, clip(PART + 1000).data)
  t.same([kept.status, kept.headers.get('upload-offset'), kept.body], [204, String(PART + 1000), undefined])
  await create(s.url, s.token, 1000, {}, clip(1000).data)
  await eventually(() => gatewayKeys(s.s3, s.bucket, 'uploads/'), keys => keys.length === 0, 40_000)
  t.pass('the records are gone')
  t.same(await openUploads(s.s3, s.bucket), [], 'the unfinished one\'s multipart upload is aborted')
  t.same(await objectKeys(s.s3, s.bucket), [], 'the finished one\'s object and the unfinished one\'s tail are deleted')
})
