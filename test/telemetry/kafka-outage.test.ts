import t from 'tap'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { privateInfra } from '../helpers/infra.js'
import { consumeBetween } from '../helpers/kafka.js'
import { eventually } from '../helpers/http.js'
import { recordFigures } from '../helpers/figures.js'

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))
/** Far beyond anything the test waits for: a request that waited for it fails the test by the abort below. */
const PUBLISH_TIMEOUT_MS = 60_000
const ANSWER_WITHIN_MS = 30_000

t.test('a broker outage: fast 503s once the bus is known down, every 200 is in Kafka, and it recovers without a restart', async t => {
  const infra = await privateInfra(t)
  if (!infra) return
  const topic = `outage-${randomUUID()}`
  const { url } = await startTestGateway(t, { BUS: 'kafka', KAFKA_BROKERS: infra.env.KAFKA_BROKERS, TOPIC_TELEMETRY: topic, TELEMETRY_PUBLISH_TIMEOUT_MS: String(PUBLISH_TIMEOUT_MS) })
  const token = await login(url)
  const answers = new Map<number, number>()
  let seq = 0
  const send = async () => {
    const i = seq++
    const res = await fetch(`${url}/v1/asset/track`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': `r${i}`, 'x-request-timestamp': '1' },
      body: JSON.stringify({ ...example, asset_id: `a${i % 5}`, seq: i }),
      signal: AbortSignal.timeout(ANSWER_WITHIN_MS)
    })
    answers.set(i, res.status)
    return { status: res.status, body: await res.json() as any, retryAfter: res.headers.get('retry-after') }
  }
  const burst = async (n: number) => (await Promise.all(Array.from({ length: n }, send))).map(r => r.status)
  const ready = async () => (await (await fetch(`${url}/health/ready`)).json() as any).components.bus

  t.same(new Set(await burst(20)), new Set([200]), 'healthy: all 200')
  t.equal((await ready()).ready, true)

  // Records in flight while the broker goes away: they get whatever the send gives.
  const during = burst(20)
  await infra.stopKafka()
  await during
  const bus = await eventually(ready, b => b.ready === false, 30_000)
  t.equal(bus.ready, false, 'readiness reports the bus down')

  const down = await Promise.all(Array.from({ length: 10 }, send))
  for (const res of down) {
    t.same([res.status, res.retryAfter], [503, '1'], 'answered 503 with Retry-After, long before the publish deadline')
    t.match(res.body, { status: 'error', message: 'Failed to publish message', detail: /^bus unavailable: / }, 'in the telemetry shape')
  }

  await infra.startKafka()
  const recovered = await eventually(send, r => r.status === 200, 90_000, 250)
  t.equal(recovered.status, 200, 'answers 200 again without restarting the gateway')
  t.same(new Set(await burst(10)), new Set([200]))
  t.equal((await ready()).ready, true, 'ready again')

  const ok = [...answers].filter(([, s]) => s === 200).map(([i]) => i)
  const failed = [...answers].filter(([, s]) => s !== 200)
  t.ok(failed.every(([, s]) => s === 500 || s === 503), 'failures are 500 or 503 only')
  // A record answered 500 may have been written; one answered 200 was; none twice.
  const messages = await consumeBetween(infra.env.KAFKA_BROKERS, topic, ok.length, ok.length + failed.length)
  const inKafka = new Set(messages.map(m => JSON.parse(m.value).seq as number))
  t.equal(inKafka.size, messages.length, 'no record is in Kafka twice')
  t.same(ok.filter(i => !inKafka.has(i)), [], 'every record answered 200 is in Kafka')
  t.same([...inKafka].filter(i => answers.get(i) === undefined), [], 'nothing unknown is in Kafka')
  t.same([...answers].filter(([i, s]) => s === 503 && inKafka.has(i)), [], 'nothing answered 503 reached Kafka: it was never sent')
  t.ok([...answers.keys()].every(i => inKafka.has(i) || answers.get(i)! >= 500), 'every record missing from Kafka was answered 5xx')
  recordFigures('faults', 'broker stopped and restarted under telemetry requests', {
    sent: answers.size, acknowledged: ok.length, found_downstream: inKafka.size, duplicates: messages.length - inKafka.size,
    left_in_storage: 'n/a', faults_injected: 1, answered_5xx: failed.length
  })
})
