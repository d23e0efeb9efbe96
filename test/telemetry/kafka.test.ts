import t from 'tap'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, CLIENT } from '../helpers/gateway.js'
import { sharedInfra } from '../helpers/infra.js'
import { consume } from '../helpers/kafka.js'

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))

t.test('records reach the real Kafka with key, headers and per-asset order', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const topic = `telemetry-${randomUUID()}`
  const { url } = await startTestGateway(t, { BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_TELEMETRY: topic, KAFKA_TOPIC_PARTITIONS: '3' })
  const token = await login(url)
  const send = (i: number) => fetch(`${url}/v1/asset/track`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': `req-${i}`, 'x-request-timestamp': '1763799330' },
    body: JSON.stringify({ ...example, asset_id: `asset-${i % 4}`, seq: i })
  })
  // Four assets at once, each asset's records one after another: a record
  // answered before the next is sent must come before it in Kafka. (Records
  // sent concurrently may reach the server in any order, so seq order says
  // nothing about them.)
  const statuses = (await Promise.all([0, 1, 2, 3].map(async a => {
    const answered: number[] = []
    for (let i = a; i < 80; i += 4) answered.push((await send(i)).status)
    return answered
  }))).flat()
  t.same(new Set(statuses), new Set([200]), 'every record answered 200')

  // Exactly 80: consume fails on an 81st, however late it comes.
  const messages = await consume(infra.KAFKA_BROKERS, topic, 80)
  t.equal(new Set(messages.map(m => m.headers['x-request-id'])).size, 80, 'every answered record is in Kafka, once')
  for (const m of messages) {
    const value = JSON.parse(m.value)
    t.equal(m.key, value.asset_id)
    t.equal(m.headers['x-request-id'], `req-${value.seq}`)
    t.equal(m.headers['client-id'], CLIENT.client_id)
    t.equal(m.headers['schema'], 'asset-tracking-data@1')
    t.equal(value.client_id, CLIENT.client_id)
  }
  for (let a = 0; a < 4; a++) {
    const mine = messages.filter(m => m.key === `asset-${a}`)
    t.equal(new Set(mine.map(m => m.partition)).size, 1, `asset-${a} stays on one partition`)
    const seqs = mine.sort((x, y) => Number(x.offset) - Number(y.offset)).map(m => JSON.parse(m.value).seq)
    t.same(seqs, [...seqs].sort((x, y) => x - y), `asset-${a} in the order it was answered`)
  }
  const ready = await (await fetch(`${url}/health/ready`)).json() as any
  t.same(ready.components.bus, { ready: true })
})
