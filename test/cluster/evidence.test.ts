import t from 'tap'
import '../helpers/no-keepalive.js'
import { addClient, startCluster } from '../helpers/cluster.js'
import { login } from '../helpers/gateway.js'
import { sharedInfra } from '../helpers/infra.js'
import { consumeSettled, endOffsets } from '../helpers/kafka.js'
import { baseEnvelope, clip, envelopePart, mediaPart, multipartBody, postEvidence } from '../helpers/multipart.js'
import { gatewayKeys, s3Client } from '../helpers/s3.js'

t.test('one event_id sent to two nodes at once, then to a third: one 202, one 409 or replay, a replay, one envelope on Kafka', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const cluster = await startCluster(t, infra, 3)
  const [n1, n2, n3] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0], typeof cluster.nodes[0]]
  const client = await addClient(cluster, 'cam-evidence', ['stream:write'])
  const token = await login(n1.url, client)

  const media = clip(2 * 1024 * 1024)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-cluster', media: [{ checksum_sha256: media.sha256 }] })), mediaPart(media.data)])
  const answers = await Promise.all([postEvidence(n1.url, token, body), postEvidence(n2.url, token, body)])
  const accepted = { status: 'accepted', event_id: 'evt-cluster', media_count: 1 }
  const fresh = answers.filter(a => a.status === 202 && a.headers.get('idempotent-replay') === null)
  const other = answers.filter(a => !fresh.includes(a))
  t.equal(fresh.length, 1, 'one of the two is stored and published')
  t.same(fresh[0]?.body, accepted)
  t.equal(other.length, 1)
  const second = other[0]!
  if (second.status === 202) {
    t.equal(second.headers.get('idempotent-replay'), 'true', 'the other is a replay (it came after the first completed)')
    t.same(second.body, accepted)
  } else {
    t.equal(second.status, 409, 'or 409 while the first is in progress')
    t.equal(second.body.code, 'idempotency_in_progress')
  }

  const offsets = await endOffsets(infra.KAFKA_BROKERS, cluster.topic)
  t.equal([...offsets.values()].reduce((a, b) => a + b, 0n), 1n, 'the 202 came once the envelope was on Kafka')

  const third = await postEvidence(n3.url, token, body)
  t.same([third.status, third.body, third.headers.get('idempotent-replay')], [202, accepted, 'true'], 'the third node replays the acknowledgment')
  t.same(await gatewayKeys(s3Client(infra), cluster.bucket, 'idempotency/'), ['idempotency/cam-evidence/evt-cluster.json'], 'one shared record')

  // A 202 means the envelope is on Kafka: it is there now; a settle period shows no second copy.
  const published = await consumeSettled(infra.KAFKA_BROKERS, cluster.topic, 1, 5000, 30_000)
  t.same(published.map(m => JSON.parse(m.value).event_id), ['evt-cluster'], 'exactly one envelope is published')
})
