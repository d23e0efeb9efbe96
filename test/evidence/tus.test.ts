import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, writeJson, CLIENT, NO_SCOPE_CLIENT } from '../helpers/gateway.js'
import { baseEnvelope, clip } from '../helpers/multipart.js'
import { eventually, rawConnect, readResponse } from '../helpers/http.js'
import { settled } from '../helpers/settle.js'
import { spawnGateway, tailBus } from '../helpers/child.js'
import { checksum, commitEvent, create, head, metadata, patch, sha256, terminate, uploadUrl } from '../helpers/tus.js'

const MiB = 1024 * 1024
const PART = 5 * MiB
const OTHER = { client_id: 'other-fleet', client_secret: 'other-secret', audiences: ['evidence-gateway'], scopes: ['stream:write'] }

async function setup (t: any, env: Record<string, string> = {}) {
  const gw = await startTestGateway(t, { S3_PART_SIZE: String(PART), ...env }, [OTHER])
  const token = await login(gw.url)
  const published = () => tailBus(gw.dataDir, 'stream.events.v1')
  const resumable = (): string[] => {
    const dir = join(gw.dataDir, 'objects', '.resumable')
    return existsSync(dir) ? readdirSync(dir) : []
  }
  return { ...gw, token, published, resumable }
}

t.test('OPTIONS describes the server without a token', async t => {
  const { url } = await setup(t, { EVIDENCE_MAX_BYTES: '1000000' })
  const res = await fetch(`${url}/v1/stream/uploads`, { method: 'OPTIONS' })
  t.equal(res.status, 204)
  t.equal(res.headers.get('tus-version'), '1.0.0')
  t.equal(res.headers.get('tus-resumable'), '1.0.0')
  t.equal(res.headers.get('tus-extension'), 'creation,creation-with-upload,termination,expiration,checksum')
  t.equal(res.headers.get('tus-max-size'), '1000000', 'Tus-Max-Size is EVIDENCE_MAX_BYTES')
  t.equal(res.headers.get('tus-checksum-algorithm'), 'sha256,sha1')
})

t.test('creation: every bad header has its status, and nothing is created', async t => {
  const { url, token, resumable } = await setup(t, { EVIDENCE_MAX_BYTES: String(20 * MiB) })
  const noScope = await login(url, NO_SCOPE_CLIENT)
  t.equal((await create(url, undefined, 10)).status, 401, 'no token')
  t.equal((await create(url, noScope, 10)).status, 403, 'no stream:write')
  const noVersion = await create(url, token, 10, { 'tus-resumable': '' })
  t.same([noVersion.status, noVersion.headers.get('tus-version'), noVersion.body.code], [412, '1.0.0', 'tus_version_unsupported'], 'empty Tus-Resumable')
  const oldVersion = await create(url, token, 10, { 'tus-resumable': '0.2.2' })
  t.same([oldVersion.status, oldVersion.body.details], [412, { 'Tus-Resumable': 'must be 1.0.0' }])
  const deferred = await create(url, token, undefined, { 'upload-defer-length': '1' })
  t.same([deferred.status, Object.keys(deferred.body.details)], [400, ['Upload-Defer-Length']], 'Upload-Defer-Length is refused')
  t.same([(await create(url, token, undefined)).body.details], [{ 'Upload-Length': 'is required' }])
  t.same((await create(url, token, 10, { 'upload-length': '-1' })).body.details, { 'Upload-Length': 'must be a non-negative integer' })
  t.same((await create(url, token, 0)).body.details, { 'Upload-Length': 'must be at least 1' })
  const big = await create(url, token, 20 * MiB + 1)
  t.same([big.status, big.body.code], [413, 'payload_too_large'], 'over Tus-Max-Size')
  t.same((await create(url, token, 10, { 'upload-metadata': metadata({ filetype: 'image/png' }) })).body.details, { 'Upload-Metadata': 'filetype must be video/mp4 or video/h264' })
  t.same((await create(url, token, 10, { 'upload-metadata': 'filetype !!!' })).status, 400, 'metadata value not base64')
  const wrongType = await create(url, token, 10, { 'content-type': 'text/plain' }, Buffer.from('0123456789'))
  t.same([wrongType.status, wrongType.body.code], [415, 'unsupported_media_type'], 'creation-with-upload in another type')
  t.same(resumable(), [], 'no upload was opened')
})

t.test('PATCH in pieces: every byte received is acknowledged, a part\'s tail too; bad headers change nothing; the committed event carries the server\'s hash', async t => {
  const { url, token, published } = await setup(t)
  const file = clip(2 * PART + 1234)
  const created = await create(url, token, file.data.length, { 'upload-metadata': metadata({ filetype: 'video/mp4', filename: 'a.mp4' }) })
  t.equal(created.status, 201)
  t.equal(created.headers.get('tus-resumable'), '1.0.0')
  t.match(created.headers.get('location'), /^\/v1\/stream\/uploads\/[0-9a-f]{32}$/)
  t.ok(Date.parse(created.headers.get('upload-expires')!) > Date.now(), 'Upload-Expires is a date ahead')
  const upload = uploadUrl(url, created)

  const short = await patch(upload, token, 0, file.data.subarray(0, 100))
  t.same([short.status, short.headers.get('upload-offset')], [204, '100'], 'a body shorter than a part is acknowledged whole')
  const first = await patch(upload, token, 100, file.data.subarray(100, PART + 100))
  const kept = PART + 100
  t.same([first.status, first.headers.get('upload-offset')], [204, String(kept)], 'the 100 bytes past the part are acknowledged too')
  const at = await head(upload, token)
  t.same([at.status, at.headers.get('upload-offset'), at.headers.get('upload-length'), at.headers.get('cache-control')], [200, String(kept), String(file.data.length), 'no-store'])
  t.equal(at.headers.get('upload-metadata'), metadata({ filetype: 'video/mp4', filename: 'a.mp4' }))

  const rest = file.data.subarray(kept)
  const stale = await patch(upload, token, PART, rest)
  t.same([stale.status, stale.body.code, stale.headers.get('upload-offset')], [409, 'upload_offset_mismatch', String(kept)], 'offset mismatch')
  t.same((await patch(upload, token, kept, rest, { 'content-type': 'application/octet-stream' })).status, 415)
  t.same((await patch(upload, token, kept, rest, { 'tus-resumable': '' })).status, 412)
  t.same((await patch(upload, token, kept, rest, { 'upload-offset': 'x' })).body.details, { 'Upload-Offset': 'must be a non-negative integer' })
  t.same((await patch(upload, token, kept, Buffer.concat([rest, Buffer.from('more')]))).status, 413, 'past Upload-Length')
  t.same((await patch(upload, token, kept, rest, { 'upload-checksum': 'md5 AAAA' })).status, 400, 'an algorithm not offered')
  const wrong = await patch(upload, token, kept, rest, { 'upload-checksum': checksum(Buffer.from('something else')) })
  t.same([wrong.status, wrong.body.code], [460, 'upload_checksum_mismatch'], 'a wrong Upload-Checksum')
  t.equal((await head(upload, token)).headers.get('upload-offset'), String(kept), 'nothing was appended')
  const wrongShort = await patch(upload, token, kept, rest.subarray(0, 10), { 'upload-checksum': checksum(Buffer.from('something else')) })
  t.same([wrongShort.status, (await head(upload, token)).headers.get('upload-offset')], [460, String(kept)], 'nor of a body that ends mid-part')

  const uncommitted = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-early', media: [{ upload_url: upload }] }))
  t.same([uncommitted.status, uncommitted.body.details], [400, { 'media[0].upload_url': `names an unfinished upload (${kept} of ${file.data.length} bytes)` }])

  const done = await patch(upload, token, kept, rest, { 'upload-checksum': checksum(rest, 'sha1') })
  t.same([done.status, done.headers.get('upload-offset')], [204, String(file.data.length)], 'the rest, after the tail read back, completes the upload')

  const mismatch = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-bad', media: [{ upload_url: upload, checksum_sha256: sha256(Buffer.from('x')) }] }))
  t.same([mismatch.status, mismatch.body], [400, { status: 'error', code: 'checksum_mismatch', details: { 'media[0]': 'checksum_sha256 does not match the uploaded file' } }])

  const envelope = baseEnvelope({ event_id: 'evt-tus', media: [{ ref: 'front', upload_url: upload, checksum_sha256: file.sha256, duration_seconds: 3 }] })
  const accepted = await commitEvent(url, token, envelope)
  t.same([accepted.status, accepted.body], [202, { status: 'accepted', event_id: 'evt-tus', media_count: 1 }])
  const replay = await commitEvent(url, token, envelope)
  t.same([replay.status, replay.headers.get('idempotent-replay')], [202, 'true'])
  const again = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-again', media: [{ upload_url: upload }] }))
  t.same(again.body.details, { 'media[0].upload_url': 'names an upload already committed to another event' })

  const [m] = await settled(published, 1)
  const media = m!.value.media
  t.match(media, [{ index: 0, ref: 'front', content_type: 'video/mp4', size_bytes: file.data.length, sha256: file.sha256, duration_seconds: 3, source: 'device' }])
  t.notOk('upload_url' in media[0], 'the published media carry no upload URL')
  t.ok(readFileSync(new URL(media[0].uri)).equals(file.data), 'the object is the file')
  t.equal((await terminate(upload, token)).status, 409, 'a committed upload is the event\'s, not terminated')
})

t.test('an upload is its client\'s alone; a foreign or unknown URL cannot be committed', async t => {
  const { url, token } = await setup(t)
  const other = await login(url, OTHER)
  const file = clip(1000)
  const created = await create(url, token, file.data.length, {}, file.data)
  t.same([created.status, created.headers.get('upload-offset')], [201, '1000'], 'creation-with-upload of a whole small clip')
  const upload = uploadUrl(url, created)
  t.equal((await head(upload, other)).status, 404)
  t.equal((await patch(upload, other, 1000, Buffer.alloc(0))).status, 404)
  t.equal((await terminate(upload, other)).status, 404)
  const foreign = await commitEvent(url, other, baseEnvelope({ event_id: 'evt-steal', media: [{ upload_url: upload }] }))
  t.same(foreign.body.details, { 'media[0].upload_url': 'names no upload of this client (unknown, terminated or expired)' })
  const elsewhere = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-x', media: [{ upload_url: 'https://example.com/files/1' }] }))
  t.same(elsewhere.body.details, { 'media[0].upload_url': 'is not the URL of an upload of this service' })
  const missing = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-y', media: [{ ref: 'a' }] }))
  t.same(missing.body.details, { 'media[0].upload_url': 'is required when the envelope is sent alone (application/json)' })
  const twice = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-z', media: [{ upload_url: upload }, { upload_url: upload }] }))
  t.same(twice.body.details, { 'media[1].upload_url': 'names an upload another media hint names' })
  const mine = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-mine', media: [{ upload_url: created.headers.get('location') }] }))
  t.equal(mine.status, 202, 'a relative URL (the Location as given) commits too')
})

t.test('creation-with-upload under a wrong Upload-Checksum: 460, the upload exists at Location with nothing appended', async t => {
  const { url, token } = await setup(t)
  const file = clip(PART + 10)
  const created = await create(url, token, file.data.length, { 'upload-checksum': checksum(Buffer.from('another body')) }, file.data)
  t.same([created.status, created.body.code], [460, 'upload_checksum_mismatch'])
  const location = created.headers.get('location')
  t.match(location, /^\/v1\/stream\/uploads\//, 'Location names the upload to go on with')
  t.equal((await head(`${url}${location}`, token)).headers.get('upload-offset'), '0', 'nothing was appended')
})

t.test('a second PATCH while one is writing: 423, Retry-After; the first goes on', async t => {
  // The first PATCH stalls as long as the test needs: no rate rule may end it meanwhile.
  const { url, token, gateway } = await setup(t, { HTTP_BODY_MIN_BYTES_PER_S: '1', STORAGE_UPLOAD_MIN_BYTES_PER_S: '1' })
  const file = clip(2 * PART)
  const location = (await create(url, token, file.data.length)).headers.get('location')!
  const socket = await rawConnect(gateway.port!)
  socket.on('error', () => undefined)
  t.teardown(() => socket.destroy())
  socket.write(`PATCH ${location} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: ${file.data.length}\r\n\r\n`)
  socket.write(file.data.subarray(0, PART + 1))
  await eventually(async () => (await head(`${url}${location}`, token)).headers.get('upload-offset'), o => o === String(PART), 10_000)
  const second = await patch(`${url}${location}`, token, PART, file.data.subarray(PART))
  t.same([second.status, second.body.code, second.headers.get('retry-after')], [423, 'upload_locked', '1'])
  t.equal((await terminate(`${url}${location}`, token)).status, 423, 'nor is it terminated meanwhile')
  const answer = readResponse(socket, /\r\n\r\n/)
  socket.write(file.data.subarray(PART + 1))
  t.match(await answer, /^HTTP\/1\.1 204 [^]*upload-offset: 10485760/i, 'the first PATCH completes the upload')
})

t.test('termination removes the upload, its parts and its tail', async t => {
  const { url, token, resumable } = await setup(t)
  const file = clip(PART + 1000).data
  const created = await create(url, token, 2 * PART, {}, file.subarray(0, 1000))
  t.same([created.status, created.headers.get('upload-offset')], [201, '1000'], 'creation-with-upload of less than a part keeps it all')
  const upload = uploadUrl(url, created)
  t.equal((await patch(upload, token, 1000, file.subarray(1000))).headers.get('upload-offset'), String(PART + 1000))
  t.equal(resumable().length, 2, 'the parts\' file and the tail\'s')
  const gone = await terminate(upload, token)
  t.same([gone.status, gone.headers.get('tus-resumable')], [204, '1.0.0'])
  t.equal((await head(upload, token)).status, 404)
  t.equal((await terminate(upload, token)).status, 404)
  t.same(resumable(), [], 'the partial file is gone')
})

t.test('expiry: past Upload-Expires an upload is gone, cannot be committed, and the sweep removes its parts and its tail', async t => {
  const { url, token, resumable } = await setup(t, { EVIDENCE_UPLOAD_EXPIRES_S: '4', S3_SWEEP_INTERVAL_MS: '100' })
  const upload = uploadUrl(url, await create(url, token, 1000, {}, clip(1000).data))
  const open = uploadUrl(url, await create(url, token, 2 * PART))
  t.equal((await patch(open, token, 0, clip(1000).data)).headers.get('upload-offset'), '1000')
  t.equal(resumable().length, 2, 'the parts\' file and the tail\'s')
  await eventually(async () => (await head(upload, token)).status, s => s === 404, 10_000)
  await eventually(async () => (await head(open, token)).status, s => s === 404, 10_000)
  const late = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-late', media: [{ upload_url: upload }] }))
  t.equal(late.status, 400)
  await eventually(async () => resumable(), files => files.length === 0, 10_000)
  t.pass('the sweep removed the parts and the tail of the unfinished upload')
})

t.test('per-client caps on open uploads and bytes held: 429 with Retry-After', async t => {
  const { url, token } = await setup(t, { EVIDENCE_UPLOAD_MAX_OPEN: '2', EVIDENCE_UPLOAD_MAX_BYTES_HELD: '3000' })
  const other = await login(url, OTHER)
  t.equal((await create(url, token, 1000)).status, 201)
  const tooBig = await create(url, token, 2001)
  t.same([tooBig.status, tooBig.body.code, tooBig.headers.get('retry-after')], [429, 'too_many_uploads', '60'], 'bytes held')
  t.equal((await create(url, token, 1000)).status, 201)
  const third = await create(url, token, 1)
  t.same([third.status, third.body.code], [429, 'too_many_uploads'], 'open uploads')
  t.equal((await create(url, other, 1000)).status, 201, 'another client has its own caps')
})

t.test('a gateway killed -9 mid-PATCH: after the restart HEAD gives the whole parts it stored, the PATCH goes on at once, and the event commits the file', async t => {
  const dir = t.testdir()
  const env = { DATA_DIR: dir, AUTH_CLIENTS_FILE: writeJson(dir, 'clients.json', [CLIENT]), LOG_LEVEL: 'info', S3_PART_SIZE: String(PART) }
  const first = spawnGateway(t, ['start'], env)
  const firstPort = (await first.waitFor('gateway listening'))['port'] as number
  const firstUrl = `http://127.0.0.1:${firstPort}`
  const token = await login(firstUrl)
  const file = clip(3 * PART + 77)
  const location = (await create(firstUrl, token, file.data.length)).headers.get('location')!
  // A PATCH of the whole file of which 2 parts and a half arrive; then the process dies.
  const socket = await rawConnect(firstPort)
  socket.on('error', () => undefined)
  socket.write(`PATCH ${location} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: ${file.data.length}\r\n\r\n`)
  socket.write(file.data.subarray(0, 2 * PART + PART / 2))
  await eventually(async () => (await head(`${firstUrl}${location}`, token)).headers.get('upload-offset'), o => o === String(2 * PART), 20_000)
  first.proc.kill('SIGKILL')
  await first.exit
  socket.destroy()

  const second = spawnGateway(t, ['start'], env)
  const url = `http://127.0.0.1:${(await second.waitFor('gateway listening'))['port'] as number}`
  const upload = `${url}${location}`
  const at = await head(upload, token)
  t.same([at.status, at.headers.get('upload-offset')], [200, String(2 * PART)], 'the offset survived')
  const rest = await patch(upload, token, 2 * PART, file.data.subarray(2 * PART))
  t.same([rest.status, rest.headers.get('upload-offset')], [204, String(file.data.length)], 'the killed PATCH\'s hold is not waited out')
  const accepted = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-restart', media: [{ upload_url: upload, checksum_sha256: file.sha256 }] }))
  t.equal(accepted.status, 202)
  const [m] = await settled(() => tailBus(dir, 'stream.events.v1'), 1)
  t.equal(m!.value.media[0].sha256, file.sha256, 'the hash went on across the restart')
  t.ok(readFileSync(new URL(m!.value.media[0].uri)).equals(file.data))
})
