import t from 'tap'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { privateInfra } from '../helpers/infra.js'
import { consume } from '../helpers/kafka.js'

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))

t.test('a broker outage: every 200 is in Kafka, every unpublished record got a 5xx, and it recovers without a restart', async t => {
  const infra = await privateInfra(t)
  if (!infra) return
  const topic = `outage-${randomUUID()}`
  const { url } = await startTestGateway(t, { BUS: 'kafka', KAFKA_BROKERS: infra.env.KAFKA_BROKERS, TOPIC_TELEMETRY: topic, TELEMETRY_PUBLISH_TIMEOUT_MS: '4000' })
  const token = await login(url)
  const answers = new Map<number, number>()
  let seq = 0
  const send = async () => {
    const i = seq++
    const res = await fetch(`${url}/v1/asset/track`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': `r${i}`, 'x-request-timestamp': '1' },
      body: JSON.stringify({ ...example, asset_id: `a${i % 5}`, seq: i })
    })
    answers.set(i, res.status)
    await res.arrayBuffer()
    return res.status
  }
  const burst = (n: number) => Promise.all(Array.from({ length: n }, send))
  const ready = async () => (await fetch(`${url}/health/ready`)).status

  t.same(new Set(await burst(20)), new Set([200]), 'healthy: all 200')
  t.equal(await ready(), 200)

  // Records in flight while the broker goes away.
  const during = burst(20)
  await infra.stopKafka()
  await during
  const down = await burst(10)
  t.ok(down.every(s => s >= 500), `while the broker is down every answer is 5xx (${[...new Set(down)]})`)
  t.equal(await ready(), 503, 'not ready while the broker is unreachable')

  await infra.startKafka()
  let recovered = false
  for (let attempt = 0; attempt < 30 && !recovered; attempt++) recovered = (await send()) === 200
  t.ok(recovered, 'answers 200 again without restarting the gateway')
  t.same(new Set(await burst(10)), new Set([200]))
  t.equal(await ready(), 200, 'ready again')

  const ok = [...answers].filter(([, s]) => s === 200).map(([i]) => i)
  const failed = [...answers].filter(([, s]) => s !== 200)
  t.ok(failed.every(([, s]) => s === 500 || s === 503), 'failures are 500 or 503 only')
  const inKafka = new Set((await consume(infra.env.KAFKA_BROKERS, topic, ok.length + failed.length, 4000)).map(m => JSON.parse(m.value).seq as number))
  t.same(ok.filter(i => !inKafka.has(i)), [], 'every record answered 200 is in Kafka')
  t.same([...inKafka].filter(i => answers.get(i) === undefined), [], 'nothing unknown is in Kafka')
  t.ok([...answers.keys()].every(i => inKafka.has(i) || answers.get(i)! >= 500), 'every record missing from Kafka was answered 5xx')
})
