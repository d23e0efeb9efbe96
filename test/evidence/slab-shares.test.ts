import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { sharedInfra } from '../helpers/infra.js'
import { eventually } from '../helpers/http.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence } from '../helpers/multipart.js'
import { metric, partialUpload, within } from '../helpers/uploads.js'
import { openUploads, s3Client } from '../helpers/s3.js'

const MiB = 1024 * 1024
const OTHER = { client_id: 'other-fleet', client_secret: 'other-fleet-secret', audiences: ['evidence-gateway'], scopes: ['stream:write'] }

t.test('slow uploads of one client hold only its share: another client\'s upload completes, the client\'s extra uploads get 503 storage_busy', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const bucket = `shares-${randomUUID()}`
  // Four 5 MiB slabs: a client alone may hold two of them (half the pool) and store three uploads at
  // once. The slow uploads keep over the minimum rate set here, so they hold their slabs for the test.
  const gw = await startTestGateway(t, {
    STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket,
    S3_PART_SIZE: String(5 * MiB), STORAGE_BUFFER_BYTES: String(20 * MiB), STORAGE_CLIENT_MAX_UPLOADS: '3', STORAGE_SLAB_WAIT_MS: '5000',
    STORAGE_UPLOAD_MIN_BYTES_PER_S: '1024'
  }, [OTHER])
  const port = Number(new URL(gw.url).port)
  const tokenA = await login(gw.url)
  const tokenB = await login(gw.url, OTHER)
  const slow = async (i: number) => {
    const body = multipartBody([envelopePart(baseEnvelope({ event_id: `evt-slow-${i}` })), mediaPart(clip(8 * MiB).data)])
    // The envelope and the clip's first 64 KiB, then 24 KiB a second (a poor
    // mobile link): a slab filling at the client's pace, slowly enough not to
    // fill during the test, fast enough that uWS does not time the request
    // out (it wants 16 KiB a second over its 10 s idle timeout).
    const first = body.length - 8 * MiB + 64 * 1024
    const upload = await partialUpload(port, tokenA, body, first)
    let at = first
    const trickle = setInterval(() => { upload.socket.write(body.subarray(at, at + 24 * 1024)); at += 24 * 1024 }, 1000)
    const stop = (): void => { clearInterval(trickle); upload.socket.destroy() }
    t.teardown(stop)
    return { ...upload, stop }
  }

  const holding = [await slow(1), await slow(2)]
  t.equal(await eventually(() => metric(gw.url, 'gateway_evidence_buffer_in_use_bytes'), v => v === 10 * MiB), 10 * MiB, 'two slow uploads hold a slab each')
  const waiting = await slow(3)
  t.equal(await eventually(() => metric(gw.url, 'gateway_evidence_uploads_waiting_for_buffer'), v => v === 1), 1, 'the third waits: its client holds its share, though a slab is free')

  const fourth = await slow(4)
  const refused = await within(fourth.response, 20_000, 'a fourth upload of the same client')
  t.equal(refused.status, 503, 'past the client\'s uploads: refused at once')
  t.match(refused.body, { status: 'error', code: 'storage_busy', details: { media: /storing 3 uploads/ } })
  t.match(refused.headers['retry-after'], /^\d+$/)

  // Under one slab: all it needs is a slab the first client may not take.
  const c = clip(3 * MiB)
  const other = await within(postEvidence(gw.url, tokenB, multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-other', media: [{ checksum_sha256: c.sha256 }] })), mediaPart(c.data)])), 20_000, 'another client\'s upload')
  t.same([other.status, other.body], [202, { status: 'accepted', event_id: 'evt-other', media_count: 1 }], 'another client\'s upload completes')
  t.equal(await metric(gw.url, 'gateway_evidence_buffer_in_use_bytes'), 10 * MiB, 'while the slow uploads still hold their slabs')

  const timedOut = await within(waiting.response, 20_000, 'the waiting upload')
  t.equal(timedOut.status, 503, 'the waiting upload is answered when its wait limit passes')
  t.match(timedOut.body, { status: 'error', code: 'storage_busy', details: { media: /within 5000 ms/ } })
  t.match(timedOut.headers['retry-after'], /^\d+$/)

  holding.forEach(u => u.stop())
  t.equal(await eventually(() => metric(gw.url, 'gateway_evidence_buffer_in_use_bytes'), v => v === 0), 0, 'every slab back once the slow clients left')
  t.same(await openUploads(s3Client(infra), bucket), [])
  const retry = await postEvidence(gw.url, tokenA, multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-slow-3' })), mediaPart(clip(MiB).data)]))
  t.equal(retry.status, 202, 'the refused event_id was released: its retry is accepted')
})
