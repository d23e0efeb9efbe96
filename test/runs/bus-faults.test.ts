import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { spawnGateway } from '../helpers/child.js'
import { startTestGateway } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { privateInfra } from '../helpers/infra.js'
import { consumeSettled, endOffsets, type Consumed } from '../helpers/kafka.js'
import { readSse } from '../helpers/sse.js'
import { recordFigures } from '../helpers/figures.js'

const json = (res: Response): Promise<any> => res.json()

/** Run events on the topic, each counted once (a run's event is its key and seq). */
const distinct = (messages: Consumed[]): number => new Set(messages.map(m => `${m.key}#${JSON.parse(m.value).seq}`)).size

/** Each run's stored events (GET /runs/{id}), by run id. */
async function storedEvents (base: string, runIds: string[]): Promise<Map<string, any[]>> {
  return new Map(await Promise.all(runIds.map(async id => [id, (await json(await fetch(`${base}/runs/${id}`))).events] as [string, any[]])))
}

// One private Kafka for the file: the first test stops and restarts it.
const infra = await privateInfra(t)
const brokers = infra?.env.KAFKA_BROKERS ?? ''

t.test('runs started, streamed and ended while Kafka is down are all on TOPIC_RUNS once it is back: in order, no gap, no duplicate', { skip: !infra }, async t => {
  const topic = `runs-${randomUUID()}`
  const { url, harnessUrl } = await startTestGateway(t, { BUS: 'kafka', KAFKA_BROKERS: brokers, TOPIC_RUNS: topic, KAFKA_TOPIC_PARTITIONS: '3' })
  const bus = async (): Promise<any> => (await json(await fetch(`${harnessUrl}/health/ready`))).components.bus
  const started: number[] = []
  const start = async (body: object): Promise<string> => {
    const res = await fetch(`${harnessUrl}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    started.push(res.status)
    return (await json(res)).run_id
  }
  const runIds = [await start({ message: 'before', mode: 'echo' })]
  t.match(await eventually(bus, b => b.ready && b.run_events_waiting === 0, 60_000), { ready: true, run_events_waiting: 0 }, 'published while the broker was up')

  await infra!.stopKafka()
  const during = await Promise.all(Array.from({ length: 8 }, (_, i) => start({ message: `during ${i}`, mode: 'echo', options: { steps: 4, delay_ms: 10 } })))
  const streams = await Promise.all(during.map(async id => readSse(await fetch(`${harnessUrl}/runs/${id}/stream`))))
  t.same(streams.map(s => s.at(-1)?.event), Array(8).fill('run.completed'), 'streamed to their end with the broker down')
  const cancelled = await start({ message: 'cancelled', mode: 'echo', options: { steps: 100, delay_ms: 50 } })
  await eventually(async () => (await json(await fetch(`${harnessUrl}/runs/${cancelled}`))).status, s => s === 'running')
  t.equal((await json(await fetch(`${harnessUrl}/runs/${cancelled}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } }))).status, 'cancelled')
  const sync = (await json(await fetch(`${harnessUrl}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'sync', mode: 'echo', options: { steps: 2 } }) }))).run_id
  runIds.push(...during, cancelled, sync)

  const down = await fetch(`${harnessUrl}/health/ready`)
  const downBody = await json(down)
  t.equal(down.status, 200, 'the harness stays ready while its bus is down: runs commit to LMDB and wait in the outbox')
  t.match(downBody.components.bus, { ready: false, error: /\(\d+ run events waiting\)$/ }, 'and says what waits')
  t.equal((await fetch(`${harnessUrl}/health/ready/bus`)).status, 503, 'a pool that needs the bus asks for it')
  const waiting = Number(/^gateway_runs_events_waiting (\d+)$/m.exec(await (await fetch(`${url}/metrics`)).text())?.[1])
  t.ok(waiting >= 8 * 7, `/metrics shows what waits (${waiting})`)

  await infra!.startKafka()
  t.match(await eventually(bus, b => b.ready && b.run_events_waiting === 0, 90_000), { ready: true, run_events_waiting: 0 }, 'the relay caught up without a restart')
  const stored = await storedEvents(harnessUrl, runIds)
  const expected = [...stored.values()].reduce((n, events) => n + events.length, 0)
  const messages = await consumeSettled(brokers, topic, expected, 5000)
  t.equal(messages.length, expected, `every event once: ${messages.length} messages for ${expected} events`)
  for (const [id, events] of stored) {
    const mine = messages.filter(m => m.key === id)
    t.same(mine.map(m => JSON.parse(m.value)), events, `${id}: the stored events, in order`)
  t.same(mine.map(m => m.headers), Array(events.length).fill({ 'client-id': 'default', schema: 'run-event@2', owner: mine[0]!.headers['owner'] }))
  }
  recordFigures('faults', 'broker stopped during runs, then restarted', {
    sent: runIds.length, acknowledged: expected, found_downstream: distinct(messages), duplicates: messages.length - distinct(messages),
    left_in_storage: 'n/a', faults_injected: 1, answered_5xx: started.filter(s => s >= 500).length
  })
})

t.test('kill -9 with runs in flight: after the restart their ends are on TOPIC_RUNS, and no event is missing', { skip: !infra }, async t => {
  const topic = `runs-${randomUUID()}`
  const env = { DATA_DIR: t.testdir(), BUS: 'kafka', KAFKA_BROKERS: brokers, TOPIC_RUNS: topic, ROLES: 'harness', KAFKA_TOPIC_PARTITIONS: '3' }
  const first = spawnGateway(t, ['start'], env)
  const base = `http://127.0.0.1:${(await first.waitFor('gateway listening'))['harnessPort']}`
  // The topics exist before the kill: otherwise reading their end offsets below makes the broker create one, and it has no leader yet.
  await eventually(async () => (await fetch(`${base}/health/ready`)).status, s => s === 200, 60_000)
  const started: number[] = []
  const run = async (path: string, body: object): Promise<string> => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    started.push(res.status)
    return (await json(res)).run_id
  }
  const start = (body: object): Promise<string> => run('/runs:start', body)
  const long = await Promise.all(Array.from({ length: 4 }, () => start({ message: 'long', mode: 'echo', options: { steps: 1000, delay_ms: 20 } })))
  for (const id of long) await eventually(async () => json(await fetch(`${base}/runs/${id}`)), r => r.last_event_id >= 6)
  const short = []
  for (let i = 0; i < 5; i++) short.push(await run('/runs', { message: 'short', mode: 'echo' }))

  first.proc.kill('SIGKILL')
  t.equal(await first.exit, null, 'killed')
  const boundary = await endOffsets(brokers, topic)

  const second = spawnGateway(t, ['start'], env)
  const base2 = `http://127.0.0.1:${(await second.waitFor('gateway listening'))['harnessPort']}`
  const bus = async (): Promise<any> => (await json(await fetch(`${base2}/health/ready`))).components.bus
  t.match(await eventually(bus, b => b.ready && b.run_events_waiting === 0, 90_000), { ready: true, run_events_waiting: 0 })
  const stored = await storedEvents(base2, [...long, ...short])
  for (const id of long) t.match(stored.get(id)!.at(-1), { type: 'run.failed', data: { status: 'failed', reason: 'interrupted' } }, `${id} ended interrupted`)
  const expected = [...stored.values()].reduce((n, events) => n + events.length, 0)
  const messages = await consumeSettled(brokers, topic, expected, 5000)

  // At least once across a crash: an event the first process published but
  // could not record as acknowledged is published again by the second. So a
  // run's messages are its events in order, where the second process may
  // repeat ones the first had already sent, identical; nothing else.
  let repeats = 0
  for (const [id, events] of stored) {
    const firstCopy = new Map<number, Consumed>()
    let next = 1
    for (const m of messages.filter(m => m.key === id)) {
      const value = JSON.parse(m.value)
      t.same(value, events[value.seq - 1], `${id} #${value.seq} is the stored event`)
      if (value.seq === next) {
        firstCopy.set(next++, m)
        continue
      }
      if (value.seq > next) {
        t.fail(`${id}: #${value.seq} came before #${next}`)
        continue
      }
      repeats++
      const original = firstCopy.get(value.seq)!
      t.ok(BigInt(original.offset) < boundary.get(original.partition)! && BigInt(m.offset) >= boundary.get(m.partition)!, `${id} #${value.seq} repeated only by the restart`)
    }
    t.equal(next - 1, events.length, `${id}: all ${events.length} events`)
  }
  for (const id of long) t.equal(messages.filter(m => m.key === id && JSON.parse(m.value).type === 'run.failed').length, 1, `${id}: its end once`)
  t.comment(`${messages.length} messages for ${expected} events (${repeats} republished after the crash)`)
  recordFigures('faults', 'gateway killed -9 with runs in flight (Kafka)', {
    sent: long.length + short.length, acknowledged: expected, found_downstream: distinct(messages), duplicates: messages.length - distinct(messages),
    left_in_storage: 'n/a', faults_injected: 1, answered_5xx: started.filter(s => s >= 500).length
  })
  second.proc.kill('SIGTERM')
  t.equal(await second.exit, 0)
})
