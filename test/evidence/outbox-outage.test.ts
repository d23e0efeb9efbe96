import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { privateInfra } from '../helpers/infra.js'
import { consume } from '../helpers/kafka.js'
import { eventually } from '../helpers/http.js'
import { recordFigures } from '../helpers/figures.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence } from '../helpers/multipart.js'

t.test('broker down: 202 from the outbox; broker up: published exactly once', async t => {
  const infra = await privateInfra(t)
  if (!infra) return
  const topic = `evidence-${randomUUID()}`
  const { url } = await startTestGateway(t, { BUS: 'kafka', KAFKA_BROKERS: infra.env.KAFKA_BROKERS, TOPIC_EVIDENCE: topic })
  const token = await login(url)
  const ready = async () => (await (await fetch(`${url}/health/ready`)).json() as any).components

  await infra.stopKafka()
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-outage' })), mediaPart(clip(100_000).data)])
  const res = await postEvidence(url, token, body)
  t.same([res.status, res.body], [202, { status: 'accepted', event_id: 'evt-outage', media_count: 1 }], 'accepted while the bus is down')
  const replay = await postEvidence(url, token, body)
  t.equal(replay.headers.get('idempotent-replay'), 'true', 'a retry by the client is a replay, not a second event')
  const during = await ready()
  t.equal(during.outbox.backlog, 1, 'readiness shows the backlog')
  t.equal(during.bus.ready, false)
  const metrics = await (await fetch(`${url}/metrics`)).text()
  t.match(metrics, /^gateway_evidence_outbox_backlog 1$/m, '/metrics shows the backlog')

  await infra.startKafka()
  const after = await eventually(ready, c => c.outbox.backlog === 0, 40_000)
  t.equal(after.outbox.backlog, 0, 'the relay drained the outbox without a restart')
  // consume fails on a second message, however late it comes.
  const [message] = await consume(infra.env.KAFKA_BROKERS, topic, 1)
  t.equal(JSON.parse(message!.value).event_id, 'evt-outage', 'published exactly once')
  recordFigures('faults', 'broker stopped while evidence is uploaded (outbox)', {
    sent: 2, acknowledged: 1, found_downstream: 1, duplicates: 0,
    left_in_storage: 'n/a', faults_injected: 1, answered_5xx: [res, replay].filter(r => r.status >= 500).length
  })
})
