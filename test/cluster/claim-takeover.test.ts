import t from 'tap'
import type { Test } from 'tap'
import '../helpers/no-keepalive.js'
import type { SpawnOptions } from '../helpers/child.js'
import { addClient, startCluster } from '../helpers/cluster.js'
import { login } from '../helpers/gateway.js'
import { eventually, rawConnect } from '../helpers/http.js'
import { sharedInfra, type InfraEnv } from '../helpers/infra.js'
import { consumeSettled } from '../helpers/kafka.js'
import { BOUNDARY, baseEnvelope, clip, envelopePart, mediaPart, multipartBody, postEvidence } from '../helpers/multipart.js'
import { gatewayKeys, s3Client } from '../helpers/s3.js'

/**
 * Two nodes, and an upload to node 1 cut off once its event_id claim is in
 * S3: node 1 is then killed -9, leaving the claim behind. Returns node 2,
 * the client's token and the whole request body to retry with.
 */
async function orphanedUpload (t: Test, infra: InfraEnv, clientId: string, eventId: string, options: SpawnOptions = {}) {
  const cluster = await startCluster(t, infra, 2, {}, options)
  const [n1, n2] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0]]
  const s3 = s3Client(infra)
  const client = await addClient(cluster, clientId, ['stream:write'])
  const token = await login(n1.url, client)
  const media = clip(6 * 1024 * 1024)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: eventId, media: [{ checksum_sha256: media.sha256 }] })), mediaPart(media.data)])
  const socket = await rawConnect(n1.port)
  socket.on('error', () => undefined)
  socket.write(`POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`)
  socket.write(body.subarray(0, 1024 * 1024))
  await eventually(() => gatewayKeys(s3, cluster.bucket, 'idempotency/'), keys => keys.length === 1, 30_000)
  await n1.child.signal('SIGKILL')
  await n1.child.exit
  socket.destroy()
  return { cluster, n2, token, body }
}

t.test('the claim of a node killed -9 mid-upload is taken over by another node once the lease of its claim has lapsed', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  // As on two machines: each node in its own pid namespace knows the other's claim by its lease only (on one machine the kernel answers at once).
  const { cluster, n2, token, body } = await orphanedUpload(t, infra, 'cam-takeover', 'evt-orphan', { isolated: true })

  // Retried as a client would, every two seconds, until node 2 takes the claim over.
  const answers: number[] = []
  const final = await eventually(async () => {
    const res = await postEvidence(n2.url, token, body)
    answers.push(res.status)
    return res
  }, res => res.status !== 409, 60_000, 2000)
  t.equal(answers[0], 409, 'right after the kill, node 1\'s lease is fresh: its claim holds')
  t.same(answers.slice(0, -1).filter(s => s !== 409), [], 'and every retry until it is stale is 409')
  t.same([final.status, final.body, final.headers.get('idempotent-replay')], [202, { status: 'accepted', event_id: 'evt-orphan', media_count: 1 }, null], 'then stored and published by node 2')
  const replay = await postEvidence(n2.url, token, body)
  t.equal(replay.headers.get('idempotent-replay'), 'true', 'and replayed after')
  const published = await consumeSettled(infra.KAFKA_BROKERS, cluster.topic, 1, 5000, 30_000)
  t.same(published.map(m => JSON.parse(m.value).event_id), ['evt-orphan'], 'published once')
})

t.test('on one machine, the claim of a node killed -9 is free at once: the kernel knows it is gone', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const { n2, token, body } = await orphanedUpload(t, infra, 'cam-local', 'evt-local')
  const retry = await postEvidence(n2.url, token, body)
  t.same([retry.status, retry.headers.get('idempotent-replay')], [202, null], 'the first retry is stored, though node 1\'s lease is still fresh')
})
