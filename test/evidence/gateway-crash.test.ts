import t from 'tap'
import { randomUUID } from 'node:crypto'
import { createServer, type Socket } from 'node:net'
import '../helpers/no-keepalive.js'
import { spawnGateway } from '../helpers/child.js'
import { CLIENT, login, writeJson } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { consumeSettled } from '../helpers/kafka.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence } from '../helpers/multipart.js'
import { recordFigures } from '../helpers/figures.js'
import { partialUpload } from '../helpers/uploads.js'
import { objectKeys, openUploads, s3Client, uploadsWithParts } from '../helpers/s3.js'

const MiB = 1024 * 1024
const ACCEPTED = 10
const STALLED = 2
const IN_FLIGHT = 6

/** A loopback port nothing listens on: a broker that refuses every connection. */
async function closedPort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise(resolve => server.close(resolve))
  return port
}

const upload = (eventId: string, size: number): Buffer =>
  multipartBody([envelopePart(baseEnvelope({ event_id: eventId, subject: { device_id: `cam-${eventId}` } })), mediaPart(clip(size).data)])

t.test('the gateway killed -9 with uploads in flight and an outbox of accepted events: after the restart every event is in Kafka once, no claim is held, nothing is left in storage', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const dir = t.testdir()
  const bucket = `crash-${randomUUID()}`
  const topic = `crash-${randomUUID()}`
  const s3 = s3Client(infra)
  const env = {
    DATA_DIR: dir, AUTH_CLIENTS_FILE: writeJson(dir, 'clients.json', [CLIENT]), LOG_LEVEL: 'info', BUS: 'kafka', TOPIC_EVIDENCE: topic,
    STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_PART_SIZE: String(5 * MiB),
    AWS_ACCESS_KEY_ID: infra.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: infra.AWS_SECRET_ACCESS_KEY, AWS_REGION: infra.AWS_REGION
  }
  let sent = 0
  let answered5xx = 0
  const post = async (url: string, token: string, body: Buffer) => {
    sent++
    const res = await postEvidence(url, token, body)
    if (res.status >= 500) answered5xx++
    return res
  }

  // The first process cannot reach its broker, so what it accepts waits in its outbox.
  const first = spawnGateway(t, ['start'], { ...env, KAFKA_BROKERS: `127.0.0.1:${await closedPort()}` })
  const firstPort = (await first.waitFor('gateway listening'))['port'] as number
  const firstUrl = `http://127.0.0.1:${firstPort}`
  const token = await login(firstUrl)

  const accepted = Array.from({ length: ACCEPTED }, (_, i) => `evt-accepted-${i}`)
  const answers = await Promise.all(accepted.map(id => post(firstUrl, token, upload(id, 256 * 1024))))
  t.same(answers.map(a => a.status), Array(ACCEPTED).fill(202), 'accepted while the broker is unreachable')
  const backlog = (await (await fetch(`${firstUrl}/health/ready`)).json() as any).components.outbox.backlog
  t.equal(backlog, ACCEPTED, 'all of them wait in the outbox')

  const stalled = Array.from({ length: STALLED }, (_, i) => `evt-stalled-${i}`)
  const sockets: Socket[] = []
  for (const id of stalled) {
    const body = upload(id, 20 * MiB)
    sent++
    sockets.push((await partialUpload(firstPort, token, body, body.length - 8 * MiB)).socket)
  }
  t.teardown(() => sockets.forEach(s => s.destroy()))
  t.equal((await eventually(() => uploadsWithParts(s3, bucket), u => u.length === STALLED)).length, STALLED, 'the stalled uploads have their multipart uploads open, with a part')

  // Uploads racing the kill, which comes as the first of them is answered: each may be accepted, cut, or not yet read.
  const racing = Array.from({ length: IN_FLIGHT }, (_, i) => `evt-racing-${i}`)
  const raced = racing.map(id => post(firstUrl, token, upload(id, MiB)).catch(() => undefined))
  await Promise.race(raced)
  first.proc.kill('SIGKILL')
  t.equal(await first.exit, null, 'killed')
  const racedAnswers = await Promise.all(raced)

  const second = spawnGateway(t, ['start'], { ...env, KAFKA_BROKERS: infra.KAFKA_BROKERS })
  const url = `http://127.0.0.1:${(await second.waitFor('gateway listening'))['port']}`
  const retries = await Promise.all([...stalled, ...racing].map(id => post(url, token, upload(id, MiB))))
  t.same(retries.map(r => r.status), Array(STALLED + IN_FLIGHT).fill(202), 'every retry is accepted: no claim outlived the killed process (no 409)')
  t.same(retries.slice(0, STALLED).map(r => r.headers.get('idempotent-replay')), Array(STALLED).fill(null), 'the stalled ones are stored afresh')
  const replay = await post(url, token, upload(accepted[0]!, 256 * 1024))
  t.same([replay.status, replay.headers.get('idempotent-replay')], [202, 'true'], 'an event accepted before the crash is a replay')

  const ready = async (): Promise<any> => (await (await fetch(`${url}/health/ready`)).json() as any).components.outbox.backlog
  t.equal(await eventually(ready, n => n === 0, 60_000), 0, 'the outbox delivered everything after the restart')
  const all = [...accepted, ...stalled, ...racing]
  const messages = await consumeSettled(infra.KAFKA_BROKERS, topic, all.length, 3000)
  const ids = messages.map(m => m.headers['message-id'])
  t.same([...new Set(ids)].sort(), all.map(id => `${CLIENT.client_id}/${id}`).sort(), 'the message-ids in Kafka are exactly the accepted events')
  const duplicates = ids.length - new Set(ids).size
  // A 202 waits for the relay's publish, and the kill comes as the first racing upload is answered: that
  // envelope may be published and not yet deleted from the outbox, so it goes out again after the restart
  // (at least once on Kafka: docs/evidence.md). Nothing else may be there twice.
  const copies = new Map<string, number>()
  for (const id of ids) copies.set(id, (copies.get(id) ?? 0) + 1)
  const racingIds = new Set(racing.map(id => `${CLIENT.client_id}/${id}`))
  t.same([...copies].filter(([id, n]) => n > 1 && !racingIds.has(id)), [], 'only an event being published at the kill may be there twice')
  t.same([...copies.values()].filter(n => n > 2), [], 'and then twice at most')

  t.same(await eventually(() => openUploads(s3, bucket), u => u.length === 0, 60_000), [], 'the sweep at start aborted the multipart uploads the dead process left')
  const referenced = new Set(messages.flatMap(m => JSON.parse(m.value).media.map((x: { uri: string }) => x.uri)))
  const objects = await objectKeys(s3, bucket)
  const orphans = objects.filter(key => !referenced.has(`s3://${bucket}/${key}`))
  t.same(orphans, [], 'every object in the bucket is the media of a published event')
  t.equal(objects.length, all.length, 'one object per event')

  recordFigures('faults', 'gateway killed -9 during uploads (Kafka, MinIO)', {
    sent,
    acknowledged: all.length,
    found_downstream: new Set(ids).size,
    duplicates,
    left_in_storage: orphans.length + (await openUploads(s3, bucket)).length,
    faults_injected: 1,
    answered_5xx: answered5xx
  })
  t.comment(`racing uploads answered before the kill: ${racedAnswers.map(a => a?.status ?? 'none').join(', ')}`)
  second.proc.kill('SIGTERM')
  t.equal(await second.exit, 0)
})
