import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { CLIENT, startTestGateway, login } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { privateInfra, type PrivateInfra } from '../helpers/infra.js'
import { consumeSettled } from '../helpers/kafka.js'
import { recordFigures } from '../helpers/figures.js'
import { telemetryLoad, type TelemetryLoad } from '../helpers/telemetry-load.js'
import { within } from '../helpers/uploads.js'

/** Clients sending at once, each one record at a time. */
const WORKERS = 6
/** Shorter than kafkajs's request timeout (10 s), so a frozen broker shows records answered 500 that may still be written. */
const PUBLISH_TIMEOUT_MS = '4000'

// One private Kafka for the file: both tests break it and bring it back.
const infra = await privateInfra(t)

/**
 * Telemetry load on a gateway of its own topic, through `fault` (which breaks
 * the broker and brings it back): waits for acknowledgments before, for the
 * bus reported down during, and for acknowledgments after; then lets every
 * record retry until it is acknowledged and reads the whole topic.
 */
async function underLoad (t: any, scenario: string, fault: { inject: (infra: PrivateInfra) => Promise<void>, repair: (infra: PrivateInfra) => Promise<void> }) {
  const topic = `broker-${scenario}-${randomUUID()}`
  const { url } = await startTestGateway(t, { BUS: 'kafka', KAFKA_BROKERS: infra!.env.KAFKA_BROKERS, TOPIC_TELEMETRY: topic, TELEMETRY_PUBLISH_TIMEOUT_MS: PUBLISH_TIMEOUT_MS })
  const token = await login(url)
  const bus = async (): Promise<any> => (await (await fetch(`${url}/health/ready`)).json() as any).components.bus
  const load = telemetryLoad(url, token, WORKERS, scenario)
  const acks = (n: number, what: string): Promise<void> => within(load.moreAcknowledged(n), 120_000, what)
  try {
    await acks(30, 'acknowledgments from a healthy broker')
    await fault.inject(infra!)
    t.match(await eventually(bus, b => b.ready === false, 60_000), { ready: false }, 'readiness reports the bus down')
    await eventually(async () => load.statuses().filter(s => s === 503).length, n => n >= WORKERS, 30_000)
    await fault.repair(infra!)
    await acks(30, 'acknowledgments once the broker is back')
  } finally {
    await load.stop()
  }
  t.match(await eventually(bus, b => b.ready === true, 30_000), { ready: true }, 'ready again without a restart')
  return { load, messages: await consumeSettled(infra!.env.KAFKA_BROKERS, topic, load.answers.size, 4000) }
}

/**
 * What the suite promises for telemetry through a broker fault: every
 * acknowledged record is in Kafka, nothing that was not sent is, and a copy
 * only comes from a record answered 500 (written, its acknowledgment lost)
 * that the client sent again: consumers drop it by its message-id header.
 */
function check (t: any, scenario: string, { load, messages }: { load: TelemetryLoad, messages: Awaited<ReturnType<typeof consumeSettled>> }): void {
  const statuses = load.statuses()
  t.same([...new Set(statuses)].filter(s => ![200, 500, 503].includes(s)), [], 'every answer is 200, 500 or 503')
  t.ok(statuses.filter(s => s === 503).length >= WORKERS, 'answered 503 at once while the bus was known down')
  const acked = [...load.answers].filter(([, s]) => s.at(-1) === 200).map(([id]) => `${CLIENT.client_id}/${id}`)
  t.equal(acked.length, load.answers.size, 'every record was acknowledged in the end, by retrying')

  const copies = new Map<string, number>()
  for (const m of messages) copies.set(m.headers['message-id']!, (copies.get(m.headers['message-id']!) ?? 0) + 1)
  t.same(messages.filter(m => `${CLIENT.client_id}/${JSON.parse(m.value).seq}` !== m.headers['message-id']), [], 'each message is the record its message-id names')
  t.same([...copies.keys()].sort(), acked.sort(), 'the message-ids in Kafka are exactly the acknowledged records')
  const duplicated = [...copies].filter(([, n]) => n > 1).map(([id]) => id.slice(CLIENT.client_id.length + 1))
  t.same(duplicated.filter(id => !load.answers.get(id)!.includes(500)), [], 'a record has copies only if one of its sends was answered 500')
  const duplicates = messages.length - copies.size
  t.comment(`${scenario}: ${statuses.length} requests, ${acked.length} records, ${messages.length} messages, ${duplicates} duplicates`)
  recordFigures('faults', scenario, {
    sent: statuses.length,
    acknowledged: acked.length,
    found_downstream: copies.size,
    duplicates,
    left_in_storage: 'n/a',
    faults_injected: 1,
    answered_5xx: statuses.filter(s => s >= 500).length
  })
}

t.test('the broker killed (-9) and restarted under telemetry load: every 200 is in Kafka, nothing else is', { skip: !infra }, async t => {
  const result = await underLoad(t, 'broker-killed', { inject: i => i.killKafka(), repair: i => i.startKafka() })
  check(t, 'broker killed -9 and restarted under telemetry load', result)
})

t.test('the broker frozen (SIGSTOP) then thawed under telemetry load: every 200 is in Kafka, nothing else is', { skip: !infra }, async t => {
  t.teardown(() => infra!.thawKafka().catch(() => undefined))
  const result = await underLoad(t, 'broker-frozen', { inject: i => i.freezeKafka(), repair: i => i.thawKafka() })
  check(t, 'broker frozen (SIGSTOP) then thawed under telemetry load', result)
})
