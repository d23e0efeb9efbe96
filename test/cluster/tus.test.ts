import t from 'tap'
import { createHash } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { addClient, startCluster } from '../helpers/cluster.js'
import { login } from '../helpers/gateway.js'
import { eventually, rawConnect } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { consumeSettled } from '../helpers/kafka.js'
import { baseEnvelope } from '../helpers/multipart.js'
import { gatewayKeys, s3Client, sha256Of } from '../helpers/s3.js'
import { commitEvent, create, head, patch } from '../helpers/tus.js'

const MiB = 1024 * 1024
const PART = 5 * MiB

/**
 * A file whose every part is its own byte (part i is all `i + 1`): the
 * object can only hash to the file's SHA-256 if every part landed in its
 * place, once, whichever node stored it.
 */
function partsFile (parts: number, tail: number): Buffer {
  return Buffer.concat([...Array.from({ length: parts }, (_, i) => Buffer.alloc(PART, i + 1)), Buffer.alloc(tail, 0xee)])
}

/** A PATCH of `body` from `offset` of which only `sent` bytes go out; the socket, to cut or keep. */
async function partialPatch (port: number, location: string, token: string, offset: number, body: Buffer, sent: number) {
  const socket = await rawConnect(port)
  socket.on('error', () => undefined)
  socket.write(`PATCH ${location} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: ${offset}\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: ${body.length}\r\n\r\n`)
  socket.write(body.subarray(0, sent))
  return socket
}

t.test('an upload begun on one node goes on on the others, from whole parts and from tails: one PATCH at a time, no sticky session, the hash carried across, one event on Kafka', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  // Node 2's PATCH stalls as long as the test needs: no rate rule may end it meanwhile.
  const cluster = await startCluster(t, infra, 3, { HTTP_BODY_MIN_BYTES_PER_S: '1', STORAGE_UPLOAD_MIN_BYTES_PER_S: '1' }, { isolated: true })
  const [n1, n2, n3] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0], typeof cluster.nodes[0]]
  const client = await addClient(cluster, 'cam-tus', ['stream:write'])
  const token = await login(n1.url, client)
  const file = partsFile(4, 4321)
  const sha = createHash('sha256').update(file).digest('hex')

  const created = await create(n1.url, token, file.length)
  t.equal(created.status, 201)
  const location = created.headers.get('location')!
  t.same(await gatewayKeys(s3Client(infra), cluster.bucket, 'uploads/'), [`uploads/cam-tus/${location.split('/').pop()}.json`], 'the record is shared')
  const first = await patch(`${n1.url}${location}`, token, 0, file.subarray(0, MiB))
  t.same([first.status, first.headers.get('upload-offset')], [204, String(MiB)], 'node 1 keeps a body shorter than a part, as the upload\'s tail')
  t.equal((await head(`${n2.url}${location}`, token)).headers.get('upload-offset'), String(MiB), 'node 2 sees it')
  const second = await patch(`${n2.url}${location}`, token, MiB, file.subarray(MiB, PART))
  t.same([second.status, second.headers.get('upload-offset')], [204, String(PART)], 'node 2 reads node 1\'s tail back and stores part 1 whole')

  // Node 2 takes a PATCH that stalls in part 3: it holds the upload meanwhile.
  const stalled = await partialPatch(n2.port, location, token, PART, file.subarray(PART), PART + MiB)
  await eventually(async () => (await head(`${n3.url}${location}`, token)).headers.get('upload-offset'), o => o === String(2 * PART), 20_000)
  const busy = await patch(`${n3.url}${location}`, token, 2 * PART, file.subarray(2 * PART))
  t.same([busy.status, busy.body.code, busy.headers.get('retry-after')], [423, 'upload_locked', '1'], 'node 3 refuses a second PATCH while node 2\'s runs')
  stalled.destroy()
  const cutAt = 2 * PART + MiB
  await eventually(async () => (await head(`${n3.url}${location}`, token)).headers.get('upload-offset'), o => o === String(cutAt), 20_000)
  t.pass('the MiB node 2\'s cut body carried past part 2 is kept')

  // The client's link came back through node 3: it asks the offset and sends the rest there.
  const rest = await eventually(() => patch(`${n3.url}${location}`, token, cutAt, file.subarray(cutAt)), r => r.status !== 423, 10_000)
  t.same([rest.status, rest.headers.get('upload-offset')], [204, String(file.length)], 'node 3 finishes it once node 2\'s PATCH has let go')
  const at = await head(`${n1.url}${location}`, token)
  t.same([at.headers.get('upload-offset'), at.headers.get('upload-length')], [String(file.length), String(file.length)], 'node 1 sees it whole')

  const envelope = baseEnvelope({ event_id: 'evt-tus-cluster', media: [{ upload_url: `${n1.url}${location}`, checksum_sha256: sha }] })
  const committed = await commitEvent(n2.url, token, envelope)
  t.same([committed.status, committed.body], [202, { status: 'accepted', event_id: 'evt-tus-cluster', media_count: 1 }], 'committed through node 2')
  const replay = await commitEvent(n3.url, token, envelope)
  t.same([replay.status, replay.headers.get('idempotent-replay')], [202, 'true'], 'node 3 replays it')
  const other = await commitEvent(n1.url, token, baseEnvelope({ event_id: 'evt-other', media: [{ upload_url: location }] }))
  t.same(other.body.details, { 'media[0].upload_url': 'names an upload already committed to another event' }, 'node 1 knows it is committed')

  const published = await consumeSettled(infra.KAFKA_BROKERS, cluster.topic, 1, 3000)
  const media = JSON.parse(published[0]!.value).media
  t.match(media, [{ index: 0, size_bytes: file.length, sha256: sha, content_type: 'video/mp4' }], 'the published SHA-256 is the file\'s, though three nodes hashed it')
  t.equal(await sha256Of(s3Client(infra), media[0].uri), sha, 'the object is the file, every part in its place')
})
