import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { spawnGateway, tailBus } from '../helpers/child.js'
import { CLIENT, login, writeJson } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { settled } from '../helpers/settle.js'
import { sharedInfra } from '../helpers/infra.js'
import { consumeBetween } from '../helpers/kafka.js'
import { recordFigures } from '../helpers/figures.js'
import { multipartBody, envelopePart, baseEnvelope, postEvidence } from '../helpers/multipart.js'

/**
 * Accepts one event in a gateway killed (SIGKILL) as soon as it says its
 * relay published a step (a debug line written before the step's delete is
 * committed, which waits for the disk), then restarts it normally on the
 * same DATA_DIR and waits until the outbox is empty again. On the local bus
 * the publish and the delete are one transaction, so the kill comes after
 * both. Returns DATA_DIR and how many of the two answers were 5xx.
 */
async function crashAfterPublish (t: any, env: Record<string, string>): Promise<{ dir: string, answered5xx: number }> {
  const dir = t.testdir()
  const base = { DATA_DIR: dir, AUTH_CLIENTS_FILE: writeJson(dir, 'clients.json', [CLIENT]), ...env }
  const doomed = spawnGateway(t, ['start'], { ...base, LOG_LEVEL: 'debug' })
  const url = `http://127.0.0.1:${(await doomed.waitFor('gateway listening'))['port']}`
  const token = await login(url)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-relayed' }))])
  void doomed.waitFor('outbox step published').then(() => doomed.proc.kill('SIGKILL'))
  // The answer races the kill: the client may get it, or lose the connection.
  const first = await postEvidence(url, token, body).catch(() => undefined)
  t.equal(await doomed.exit, null, 'killed as its relay published')

  const restarted = spawnGateway(t, ['start'], base)
  const again = `http://127.0.0.1:${(await restarted.waitFor('gateway listening'))['port']}`
  const retry = await postEvidence(again, token, body)
  t.same([retry.status, retry.headers.get('idempotent-replay')], [202, 'true'], `the event was accepted before the crash (first answer: ${first?.status ?? 'none'}); a retry is a replay`)
  const backlog = await eventually(async () => (await (await fetch(`${again}/health/ready`)).json() as any).components.outbox.backlog, n => n === 0)
  t.equal(backlog, 0, 'the relay drained the outbox after the restart')
  return { dir, answered5xx: [first, retry].filter(r => r !== undefined && r.status >= 500).length }
}

t.test('local bus: a crash between publish and delete loses neither and publishes once (one transaction)', async t => {
  const { dir, answered5xx } = await crashAfterPublish(t, {})
  // settled fails on a second copy, however late it comes.
  const [copy] = await settled(() => tailBus(dir, 'stream.events.v1'), 1)
  t.equal(copy!.value.event_id, 'evt-relayed', 'exactly once')
  recordFigures('faults', 'gateway killed -9 between outbox publish and delete (local bus)', {
    sent: 2, acknowledged: 1, found_downstream: 1, duplicates: 0, left_in_storage: 'n/a', faults_injected: 1, answered_5xx: answered5xx
  })
})

t.test('Kafka: a crash between publish and delete publishes again, with one message-id to drop the copy by', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const topic = `evidence-crash-${randomUUID()}`
  const { answered5xx } = await crashAfterPublish(t, { BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_EVIDENCE: topic })
  // consumeBetween fails on a third copy, however late it comes.
  const copies = await consumeBetween(infra.KAFKA_BROKERS, topic, 1, 2)
  t.comment(`${copies.length} cop${copies.length === 1 ? 'y' : 'ies'}: ${copies.length === 2 ? 'the kill came before the delete' : 'the delete was committed before the kill'}`)
  t.same(copies.map(m => JSON.parse(m.value).event_id), copies.map(() => 'evt-relayed'), 'at least once: the acknowledged publish, and maybe the one after the restart')
  t.same(copies.map(m => m.headers['message-id']), copies.map(() => `${CLIENT.client_id}/evt-relayed`), 'every copy carries the same message-id')
  recordFigures('faults', 'gateway killed -9 between outbox publish and delete (Kafka)', {
    sent: 2, acknowledged: 1, found_downstream: new Set(copies.map(m => m.headers['message-id'])).size, duplicates: copies.length - 1, left_in_storage: 'n/a', faults_injected: 1, answered_5xx: answered5xx
  })
})
