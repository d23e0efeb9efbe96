import t from 'tap'
import '../helpers/no-keepalive.js'
import { rmSync } from 'node:fs'
import { addClient, startCluster } from '../helpers/cluster.js'
import { login } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { privateInfra, sharedInfra } from '../helpers/infra.js'
import { consumeSettled } from '../helpers/kafka.js'
import { baseEnvelope, clip, envelopePart, mediaPart, multipartBody, postEvidence } from '../helpers/multipart.js'
import { objectKeys, openUploads, s3Client, sha256Of } from '../helpers/s3.js'
import { partialUpload } from '../helpers/uploads.js'

const MiB = 1024 * 1024

t.test('a node frozen mid-upload past its claim\'s lease: the retry elsewhere wins, the thawed node answers the truth, one envelope', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  // Each node in its own pid namespace, as on machines of their own: only the lease tells one's claims from the other's.
  const cluster = await startCluster(t, infra, 3, {}, { isolated: true })
  const [, n2, n3] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0], typeof cluster.nodes[0]]
  const client = await addClient(cluster, 'cam-fenced', ['stream:write'])
  const token = await login(n2.url, client)
  const s3 = s3Client(infra)

  const media = clip(24 * MiB)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-fenced', media: [{ checksum_sha256: media.sha256 }] })), mediaPart(media.data)])
  const first = await partialUpload(n2.port, token, body, body.length / 2)
  t.teardown(() => first.socket.destroy())
  // Halfway: some of its media is stored under its attempt's folder.
  await eventually(async () => (await objectKeys(s3, cluster.bucket)).length + (await openUploads(s3, cluster.bucket)).length, n => n > 0, 30_000)
  await n2.child.signal('SIGSTOP')
  const frozenAt = Date.now()

  // The client gives up on node 2 and retries on node 3 until the lease of node 2's claim has lapsed.
  const retried = await eventually(() => postEvidence(n3.url, token, body), res => res.status !== 409, 60_000, 2000)
  t.same([retried.status, retried.headers.get('idempotent-replay'), retried.body], [202, null, { status: 'accepted', event_id: 'evt-fenced', media_count: 1 }], `node 3 took the event over ${Date.now() - frozenAt} ms after the freeze`)

  await n2.child.signal('SIGCONT')
  first.sendRest()
  const late = await first.response
  t.ok(late.status === 409 || (late.status === 202 && late.headers['idempotent-replay'] === 'true'), `the thawed node never answers a fresh 202: ${late.status} ${JSON.stringify(late.body)} ${late.headers['idempotent-replay'] ?? ''}`)

  const published = await consumeSettled(infra.KAFKA_BROKERS, cluster.topic, 1, 5000, 30_000)
  t.equal(new Set(published.map(m => m.value)).size, 1, `one envelope for the event_id (${published.length} cop${published.length === 1 ? 'y' : 'ies'}, the same bytes)`)
  const envelope = JSON.parse(published[0]!.value)
  const [named] = envelope.media
  t.equal(named.size_bytes, media.data.length)
  t.equal(named.sha256, media.sha256)
  t.equal(await sha256Of(s3, named.uri), media.sha256, 'the object it names exists and matches')
  const keys = await eventually(() => objectKeys(s3, cluster.bucket), k => k.length === 1, 30_000)
  t.same(keys.map(k => `s3://${cluster.bucket}/${k}`), [named.uri], 'and the thawed node\'s objects are gone')
})

t.test('a broker outage: nodes stay in rotation for evidence, and every event answered 202 reaches the bus, even one whose node died with its disk', async t => {
  const infra = await privateInfra(t)
  if (!infra) return
  const cluster = await startCluster(t, infra.env, 2)
  const [n1, n2] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0]]
  const client = await addClient(cluster, 'cam-outage', ['stream:write'])
  const token = await login(n1.url, client)
  const post = (url: string, id: string): ReturnType<typeof postEvidence> => postEvidence(url, token, multipartBody([envelopePart(baseEnvelope({ event_id: id })), mediaPart(clip(64 * 1024).data)]))

  await infra.stopKafka()
  const ids = Array.from({ length: 8 }, (_, i) => `evt-outage-${i}`)
  const answers = await Promise.all(ids.map((id, i) => post((i % 2 === 0 ? n1 : n2).url, id)))
  t.same(answers.map(a => a.status), ids.map(() => 202), 'accepted while the broker is down')
  for (const n of [n1, n2]) {
    t.equal((await fetch(`${n.url}/health/ready`)).status, 200, 'the node stays in the evidence pool\'s rotation')
    t.equal((await fetch(`${n.url}/health/ready/bus`)).status, 503, 'and out of the telemetry pool\'s')
  }
  // Node 1 dies with its disk: what it accepted lives in the shared claim records, not on it.
  await n1.child.signal('SIGKILL')
  await n1.child.exit
  rmSync(n1.dataDir, { recursive: true, force: true })

  await infra.startKafka()
  const published = await consumeSettled(infra.env.KAFKA_BROKERS, cluster.topic, ids.length, 5000, 120_000)
  const found = published.map(m => JSON.parse(m.value).event_id as string)
  t.same([...found].sort(), [...ids].sort(), 'every accepted event is on the bus, once')
  const backlog = await eventually(async () => (await (await fetch(`${n2.url}/health/ready`)).json() as any).components.outbox.backlog, n => n === 0, 60_000)
  t.equal(backlog, 0, 'and nothing is left pending')
})
