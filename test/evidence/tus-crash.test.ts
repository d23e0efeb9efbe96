import t from 'tap'
import { randomUUID } from 'node:crypto'
import { createServer, connect, type Socket } from 'node:net'
import '../helpers/no-keepalive.js'
import { spawnGateway } from '../helpers/child.js'
import { startTestGateway, login, writeJson, CLIENT } from '../helpers/gateway.js'
import { eventually, rawConnect } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { consume } from '../helpers/kafka.js'
import { baseEnvelope, clip } from '../helpers/multipart.js'
import { commitEvent, create, head, patch } from '../helpers/tus.js'
import { metric } from '../helpers/uploads.js'

// A tus PATCH whose client or gateway goes away mid-body, on real Kafka and MinIO.

const MiB = 1024 * 1024
const PART = 5 * MiB

async function setup (t: any, env: Record<string, string> = {}) {
  const infra = sharedInfra(t)
  if (!infra) return undefined
  const gw = await startTestGateway(t, {
    ROLES: 'auth,ingest', STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: `tus-${randomUUID()}`, S3_PART_SIZE: String(PART),
    BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_EVIDENCE: `evidence-${randomUUID()}`, ...env
  })
  return { ...gw, infra, token: await login(gw.url) }
}

/**
 * A TCP proxy to the object store that, while held, keeps what the gateway
 * sends instead of passing it on (a store that is slow to take a part).
 */
async function holdingProxy (t: any, endpoint: string): Promise<{ endpoint: string, hold: () => void, release: () => void, heldBytes: () => number }> {
  const upstreamAt = new URL(endpoint)
  let held: Array<() => void> | undefined
  let heldBytes = 0
  const sockets = new Set<Socket>()
  const server = createServer(client => {
    const upstream = connect(Number(upstreamAt.port), upstreamAt.hostname)
    sockets.add(client).add(upstream)
    client.on('data', chunk => {
      if (held === undefined) upstream.write(chunk)
      else {
        heldBytes += chunk.length
        held.push(() => upstream.write(chunk))
      }
    })
    upstream.on('data', chunk => client.write(chunk))
    const end = (): void => { client.destroy(); upstream.destroy() }
    client.on('close', end).on('error', end)
    upstream.on('close', end).on('error', end)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { for (const s of sockets) s.destroy(); server.close() })
  return {
    endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    hold: () => { held = [] },
    release: () => { const queued = held ?? []; held = undefined; for (const send of queued) send() },
    heldBytes: () => heldBytes
  }
}

t.test('a client that leaves while its whole part is on the way to the store keeps that part, and the bytes it sent past it', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const proxy = await holdingProxy(t, infra.S3_ENDPOINT)
  // BUS=local: the records in LMDB, so only the parts go through the proxy.
  const s = await setup(t, { S3_ENDPOINT: proxy.endpoint, BUS: 'local' })
  if (!s) return
  const file = clip(2 * PART)
  const location = (await create(s.url, s.token, file.data.length)).headers.get('location')!
  proxy.hold()
  const socket = await rawConnect(s.gateway.port!)
  socket.on('error', () => undefined)
  socket.write(`PATCH ${location} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.token}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: ${file.data.length}\r\n\r\n`)
  socket.write(file.data.subarray(0, PART + 1000))
  await eventually(async () => proxy.heldBytes(), n => n > PART, 10_000)
  socket.destroy()
  // The part is held until the gateway has heard of the disconnect (the PATCH counted as 499).
  await eventually(async () => metric(s.url, 'gateway_http_requests_total{server="gateway",method="PATCH",route="/v1/stream/uploads/{id}",status="499"}'), n => n === 1, 10_000)
  proxy.release()
  const offset = await eventually(async () => (await head(`${s.url}${location}`, s.token)).headers.get('upload-offset'), o => o === String(PART + 1000), 15_000)
  t.equal(offset, String(PART + 1000), 'the part delivered whole before the client left is stored and recorded, and the 1000 bytes after it kept as its tail')
  const rest = await eventually(() => patch(`${s.url}${location}`, s.token, PART + 1000, file.data.subarray(PART + 1000)), r => r.status !== 423, 10_000)
  t.same([rest.status, rest.headers.get('upload-offset')], [204, String(file.data.length)], 'the rest completes it')
  const committed = await commitEvent(s.url, s.token, baseEnvelope({ event_id: 'evt-tus-left', media: [{ upload_url: location, checksum_sha256: file.sha256 }] }))
  t.equal(committed.status, 202, 'the server\'s hash is the file\'s')
})

t.test('one node of a cluster (S3 records) killed -9 mid-PATCH and started again: its lock is not waited out, the upload goes on and commits', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const dir = t.testdir()
  const bucket = `tus-${randomUUID()}`
  const topic = `evidence-${randomUUID()}`
  const env = {
    DATA_DIR: dir, AUTH_CLIENTS_FILE: writeJson(dir, 'clients.json', [CLIENT]), LOG_LEVEL: 'info',
    ROLES: 'auth,ingest', STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_PART_SIZE: String(PART),
    BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_EVIDENCE: topic,
    AWS_ACCESS_KEY_ID: infra.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: infra.AWS_SECRET_ACCESS_KEY, AWS_REGION: infra.AWS_REGION
  }
  const first = spawnGateway(t, ['start'], env)
  const firstPort = (await first.waitFor('gateway listening'))['port'] as number
  const firstUrl = `http://127.0.0.1:${firstPort}`
  const token = await login(firstUrl)
  const file = clip(2 * PART + 99)
  const location = (await create(firstUrl, token, file.data.length)).headers.get('location')!
  const socket = await rawConnect(firstPort)
  socket.on('error', () => undefined)
  socket.write(`PATCH ${location} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\nContent-Length: ${file.data.length}\r\n\r\n`)
  socket.write(file.data.subarray(0, PART + PART / 2))
  await eventually(async () => (await head(`${firstUrl}${location}`, token)).headers.get('upload-offset'), o => o === String(PART), 20_000)
  first.proc.kill('SIGKILL')
  await first.exit
  socket.destroy()

  const second = spawnGateway(t, ['start'], env)
  const url = `http://127.0.0.1:${(await second.waitFor('gateway listening'))['port'] as number}`
  const rest = await patch(`${url}${location}`, token, PART, file.data.subarray(PART))
  t.same([rest.status, rest.headers.get('upload-offset')], [204, String(file.data.length)], 'no 423: the kernel says the holder is gone')
  const committed = await commitEvent(url, token, baseEnvelope({ event_id: 'evt-tus-restart', media: [{ upload_url: location, checksum_sha256: file.sha256 }] }))
  t.equal(committed.status, 202)
  const [message] = await consume(infra.KAFKA_BROKERS, topic, 1)
  t.equal(JSON.parse(message!.value).media[0].sha256, file.sha256, 'the hash went on across the kill')
})

