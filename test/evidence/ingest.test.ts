import t from 'tap'
import { readdirSync, existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, NO_SCOPE_CLIENT, CLIENT } from '../helpers/gateway.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence, BOUNDARY } from '../helpers/multipart.js'
import { rawConnect, readResponse, eventually } from '../helpers/http.js'
import { settled } from '../helpers/settle.js'
import { tailBus } from '../helpers/child.js'

async function setup (t: any, env: Record<string, string> = {}) {
  const gw = await startTestGateway(t, env)
  const token = await login(gw.url)
  const post = (body: Buffer, headers: Record<string, string> = {}) => postEvidence(gw.url, token, body, headers)
  const objects = (): string[] => {
    const root = join(gw.dataDir, 'objects')
    return existsSync(root) ? readdirSync(root, { recursive: true, withFileTypes: true }).filter(d => d.isFile()).map(d => join(d.parentPath, d.name)) : []
  }
  /** Folders under objects/ with nothing in them (the partial-file folder aside). */
  const emptyFolders = (): string[] => {
    const root = join(gw.dataDir, 'objects')
    return readdirSync(root, { recursive: true, withFileTypes: true }).filter(d => d.isDirectory()).map(d => join(d.parentPath, d.name))
      .filter(p => readdirSync(p).length === 0).map(p => p.slice(root.length + 1)).filter(p => p !== '.partial')
  }
  const published = () => tailBus(gw.dataDir, 'stream.events.v1')
  /** The relay publishes after the 202: exactly `n` envelopes on the bus, and no late copy. */
  const publishedExactly = (n: number) => settled(published, n)
  return { ...gw, token, post, objects, emptyFolders, published, publishedExactly }
}

t.test('several clips: 202 with only the ack; objects stored; envelope published by reference', async t => {
  const { post, objects, publishedExactly, dataDir } = await setup(t, { EVIDENCE_PLAYBACK_BASE_URL: 'https://play.example/v' })
  const a = clip(300_000)
  const b = clip(1_200_000)
  const body = multipartBody([
    envelopePart(baseEnvelope({ event_id: 'evt-multi', media: [{ ref: 'front', checksum_sha256: a.sha256, duration_seconds: 4 }, { ref: 'rear', source: 'generated' }], attributes: { plate: 'B-XY 1' } })),
    mediaPart(a.data),
    mediaPart(b.data, 'video/h264')
  ])
  const res = await post(body, { 'x-request-id': 'ev-req-1' })
  t.equal(res.status, 202)
  t.same(res.body, { status: 'accepted', event_id: 'evt-multi', media_count: 2 }, 'the response carries no storage location')
  t.equal(res.headers.get('x-request-id'), 'ev-req-1')
  t.equal(res.headers.get('idempotent-replay'), null)

  const files = objects().map(f => f.slice(join(dataDir, 'objects').length + 1))
  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '/')
  t.same(files.sort(), [`${CLIENT.client_id}/${day}/evt-multi/0.mp4`, `${CLIENT.client_id}/${day}/evt-multi/1.h264`])

  const [m] = await publishedExactly(1)
  t.equal(m!.key, `${CLIENT.client_id}/cam-3`)
  t.same(m!.headers, { 'x-request-id': 'ev-req-1', 'client-id': CLIENT.client_id, schema: 'event-envelope@1.0', 'message-id': `${CLIENT.client_id}/evt-multi` })
  const env = m!.value
  t.equal(env.client_id, CLIENT.client_id)
  t.equal(env.request_id, 'ev-req-1')
  t.same(env.attributes, { plate: 'B-XY 1' })
  t.equal(env.media.length, 2)
  t.match(env.media[0], { index: 0, ref: 'front', content_type: 'video/mp4', size_bytes: 300_000, sha256: a.sha256, duration_seconds: 4, source: 'device' })
  t.match(env.media[1], { index: 1, ref: 'rear', content_type: 'video/h264', size_bytes: 1_200_000, sha256: b.sha256, source: 'generated' })
  t.equal(env.media[0].playback_url, `https://play.example/v/${CLIENT.client_id}/${day}/evt-multi/0.mp4`)
  t.same(readFileSync(new URL(env.media[1].uri)), b.data, 'the uri points at the stored bytes')
})

t.test('an event with no media, and a generated event_id', async t => {
  const { post, publishedExactly } = await setup(t)
  const res = await post(multipartBody([envelopePart(baseEnvelope())]))
  t.equal(res.status, 202)
  t.match(res.body.event_id, /^evt-[0-9a-f-]{36}$/)
  t.equal(res.body.media_count, 0)
  const [m] = await publishedExactly(1)
  t.equal(m!.value.event_id, res.body.event_id)
})

t.test('a replay answers the same 202 with Idempotent-Replay and stores and publishes nothing', async t => {
  const { post, objects, publishedExactly } = await setup(t)
  const c = clip(50_000)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-once' })), mediaPart(c.data)])
  const first = await post(body)
  const before = objects()
  const again = await post(body)
  t.equal(again.status, 202)
  t.same(again.body, first.body)
  t.equal(again.headers.get('idempotent-replay'), 'true')
  t.same(objects(), before, 'nothing new stored')
  t.equal((await publishedExactly(1))[0]!.value.event_id, 'evt-once', 'published once')
})

t.test('the same event_id while the first is still uploading is 409 idempotency_in_progress', async t => {
  const { post, port, token } = await setup(t).then(s => ({ ...s, port: Number(new URL(s.url).port) }))
  const head = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-busy' })), mediaPart(Buffer.alloc(10))]).subarray(0, 400)
  const socket = await rawConnect(port)
  socket.write(`POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: 100000\r\n\r\n`)
  socket.write(head)
  let res = await post(multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-busy' }))]))
  for (let i = 0; i < 50 && res.status === 202; i++) res = await post(multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-busy' }))]))
  t.equal(res.status, 409)
  t.same(res.body, { status: 'error', code: 'idempotency_in_progress', details: { event_id: 'evt-busy is being processed by another request' } })
  socket.destroy()
})

t.test('uploads share one buffer budget: one past it waits, paused, until memory frees; /metrics shows both', async t => {
  // No wait limit in reach: this is about waiting until memory frees (slab-shares.test.ts has the limit).
  const { url, token, objects } = await setup(t, { S3_PART_SIZE: String(5 * 1024 * 1024), STORAGE_BUFFER_BYTES: String(5 * 1024 * 1024), STORAGE_SLAB_WAIT_MS: '600000' })
  const port = Number(new URL(url).port)
  const gauge = async (name: string): Promise<number> => {
    const text = await (await fetch(new URL('/metrics', url))).text()
    return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1])
  }
  const start = async (eventId: string) => {
    const body = multipartBody([envelopePart(baseEnvelope({ event_id: eventId })), mediaPart(clip(64_000).data)])
    const socket = await rawConnect(port)
    socket.write(`POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`)
    socket.write(body.subarray(0, 1000))
    return { socket, rest: body.subarray(1000) }
  }
  const first = await start('evt-first')
  t.equal(await eventually(() => gauge('gateway_evidence_buffer_in_use_bytes'), n => n > 0), 5 * 1024 * 1024, 'the first upload holds the only slab')
  // The second client sends its whole body: it waits for memory, not for its client (one that stalls is slow: 408).
  const second = await start('evt-second')
  second.socket.write(second.rest)
  t.equal(await eventually(() => gauge('gateway_evidence_uploads_waiting_for_buffer'), n => n === 1), 1, 'the second waits for it')
  first.socket.write(first.rest)
  t.match(await readResponse(first.socket, /\}$/), /^HTTP\/1\.1 202 [\s\S]*"event_id":"evt-first"/)
  t.match(await readResponse(second.socket, /\}$/), /^HTTP\/1\.1 202 [\s\S]*"event_id":"evt-second"/, 'and completes once the first has let go')
  // The slab is given back as the upload's last step, which may come just after its 202 is written.
  const gauges = async (): Promise<number[]> => [await gauge('gateway_evidence_buffer_in_use_bytes'), await gauge('gateway_evidence_uploads_waiting_for_buffer')]
  t.same(await eventually(gauges, ([inUse, waiting]) => inUse === 0 && waiting === 0), [0, 0], 'both back to zero')
  t.equal(objects().length, 2)
  first.socket.destroy()
  second.socket.destroy()
})

t.test('every 400 has its exact code and details, and nothing is stored or published', async t => {
  const { post, objects, emptyFolders, published } = await setup(t, { EVIDENCE_MAX_MEDIA: '2' })
  const good = clip(20_000)
  const cases: Array<[string, Buffer, string, Record<string, string>]> = [
    ['missing event_type', multipartBody([envelopePart(baseEnvelope({ event_type: undefined }))]), 'validation_error', { eventType: 'is required' }],
    ['unknown event_type', multipartBody([envelopePart(baseEnvelope({ event_type: 'warehouse.fire' }))]), 'unknown_event_type', { event_type: 'warehouse.fire is not in the allowlist' }],
    ['top-level client_id', multipartBody([envelopePart(baseEnvelope({ client_id: 'x' }))]), 'validation_error', { clientId: 'must not be sent: client_id comes from the token (use subject.client_id to override)' }],
    ['checksum mismatch', multipartBody([envelopePart(baseEnvelope({ media: [{ checksum_sha256: good.sha256 }, { checksum_sha256: 'b'.repeat(64) }] })), mediaPart(good.data), mediaPart(clip(1000).data)]), 'checksum_mismatch', { 'media[1]': 'checksum_sha256 does not match the uploaded file' }],
    ['media before the envelope', multipartBody([mediaPart(good.data), envelopePart(baseEnvelope())]), 'validation_error', { envelope: 'must be the first part' }],
    ['no envelope at all', multipartBody([]), 'validation_error', { envelope: 'is required' }],
    ['a second envelope', multipartBody([envelopePart(baseEnvelope()), envelopePart(baseEnvelope())]), 'validation_error', { 'parts[1]': 'a second envelope part' }],
    ['an unknown part', multipartBody([envelopePart(baseEnvelope()), { name: 'thumbnail', contentType: 'image/png', data: 'x' }]), 'validation_error', { 'parts[1]': 'unknown part name "thumbnail"' }],
    ['another media type', multipartBody([envelopePart(baseEnvelope()), mediaPart(good.data), mediaPart(good.data, 'video/quicktime')]), 'validation_error', { 'media[1]': 'must be video/mp4 or video/h264' }],
    ['too many media parts', multipartBody([envelopePart(baseEnvelope()), mediaPart(good.data), mediaPart(good.data), mediaPart(good.data)]), 'validation_error', { media: 'at most 2 media parts' }],
    ['more hints than parts', multipartBody([envelopePart(baseEnvelope({ media: [{}, {}] })), mediaPart(good.data)]), 'validation_error', { media: '2 media hints but 1 media parts' }],
    ['envelope over 64 KiB', multipartBody([envelopePart(baseEnvelope({ attributes: { pad: 'x'.repeat(70_000) } }))]), 'validation_error', { envelope: 'must not exceed 65536 bytes' }],
    ['envelope not JSON', multipartBody([{ name: 'envelope', contentType: 'application/json', data: '{nope' }]), 'validation_error', { envelope: 'must be valid JSON' }],
    ['envelope typed text/plain', multipartBody([{ name: 'envelope', contentType: 'text/plain', data: JSON.stringify(baseEnvelope()) }]), 'validation_error', { envelope: 'must be application/json' }],
    ['envelope typed as a video', multipartBody([{ name: 'envelope', contentType: 'video/mp4', data: JSON.stringify(baseEnvelope()) }]), 'validation_error', { envelope: 'must be application/json' }]
  ]
  for (const [name, body, code, details] of cases) {
    const res = await post(body)
    t.equal(res.status, 400, `${name}: 400`)
    t.same(res.body, { status: 'error', code, details }, `${name}: body`)
  }
  const notMultipart = await post(Buffer.from('{}'), { 'content-type': 'text/plain' })
  t.same([notMultipart.status, notMultipart.body], [400, { status: 'error', code: 'validation_error', details: { contentType: 'must be multipart/form-data with a boundary' } }])
  const envelopeAlone = await post(Buffer.from('{}'), { 'content-type': 'application/json' })
  t.same([envelopeAlone.status, envelopeAlone.body.details], [400, { schemaVersion: 'is required', eventType: 'is required', occurredAt: 'is required', subject: 'is required' }], 'JSON is the envelope alone, committing resumable uploads (docs/evidence.md), validated as such')
  const truncated = await post(multipartBody([envelopePart(baseEnvelope()), mediaPart(good.data)]).subarray(0, 600))
  t.equal(truncated.status, 400, 'a truncated multipart body is a 400')
  t.equal(truncated.body.code, 'validation_error')

  t.same(objects(), [], 'no object left behind')
  t.same(emptyFolders(), [], 'nor an empty event folder')
  t.same(await published(), [], 'nothing published')
  const retry = await post(multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-after-fail', media: [{ checksum_sha256: 'c'.repeat(64) }] })), mediaPart(good.data)]))
  t.equal(retry.body.code, 'checksum_mismatch')
  const fixed = await post(multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-after-fail' })), mediaPart(good.data)]))
  t.equal(fixed.status, 202, 'a failed request leaves no idempotency record: the same event_id succeeds next')
  t.same((await settled(published, 1)).map(m => m.value.event_id), ['evt-after-fail'], 'of all these, only the good upload was ever published')
})

t.test('an envelope typed application/json with parameters, or not typed at all, is read as JSON', async t => {
  const { post, published } = await setup(t)
  const withCharset = await post(multipartBody([{ name: 'envelope', contentType: 'Application/JSON; charset=utf-8', data: JSON.stringify(baseEnvelope({ event_id: 'evt-charset' })) }]))
  t.equal(withCharset.status, 202)
  const untyped = await post(multipartBody([{ name: 'envelope', data: JSON.stringify(baseEnvelope({ event_id: 'evt-untyped' })) }]))
  t.equal(untyped.status, 202, 'what curl -F sends without ;type=')
  t.same((await settled(published, 2)).map(m => m.value.event_id).sort(), ['evt-charset', 'evt-untyped'])
})

t.test('401 without a valid token, 403 without stream:write', async t => {
  const { url } = await setup(t)
  const body = multipartBody([envelopePart(baseEnvelope())])
  const none = await postEvidence(url, undefined, body)
  t.same([none.status, none.body], [401, { status: 'error', code: 'unauthorized', details: { request: 'missing Bearer token' } }])
  const bad = await postEvidence(url, 'a.b.c', body)
  t.equal(bad.status, 401)
  const reader = await login(url, NO_SCOPE_CLIENT)
  const forbidden = await postEvidence(url, reader, body)
  t.same([forbidden.status, forbidden.body], [403, { status: 'error', code: 'forbidden', details: { authorization: 'scope stream:write required' } }])
})

t.test('413 payload_too_large from Content-Length before reading, and by count', async t => {
  const { url, post, objects, emptyFolders, token } = await setup(t, { EVIDENCE_MAX_BYTES: '100000' })
  const big = multipartBody([envelopePart(baseEnvelope()), mediaPart(clip(150_000).data)])
  const declared = await post(big)
  t.same([declared.status, declared.body], [413, { status: 'error', code: 'payload_too_large', details: { body: 'must not exceed 100000 bytes' } }])
  const port = Number(new URL(url).port)
  const socket = await rawConnect(port)
  socket.write(`POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nTransfer-Encoding: chunked\r\n\r\n`)
  socket.write(`${big.length.toString(16)}\r\n`)
  socket.write(big)
  socket.write('\r\n0\r\n\r\n')
  const text = await readResponse(socket, /\}\}$/)
  t.match(text, /^HTTP\/1\.1 413 /)
  t.match(text, /"code":"payload_too_large"/)
  t.same(objects(), [], 'the partial object was removed')
  t.same(emptyFolders(), [], 'and no folder was left for it')
})
