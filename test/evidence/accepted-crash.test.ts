import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { spawnGateway, tailBus } from '../helpers/child.js'
import { CLIENT, login, writeJson } from '../helpers/gateway.js'
import { rawConnect } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { consumeBetween } from '../helpers/kafka.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, BOUNDARY } from '../helpers/multipart.js'
import { settledBetween } from '../helpers/settle.js'

const EVENTS = 5

/**
 * A 202 promises the event will be published (docs/evidence.md): the outbox
 * commit happens before it. Uploads `EVENTS` events at once to a real child
 * gateway and kills it with SIGKILL the moment the first 202 arrives (in the
 * socket's data handler, before anything else runs), restarts it on the same
 * DATA_DIR, and returns the event_ids whose 202 arrived (each must then be on
 * the bus) and the DATA_DIR. An answer sent before the commit loses its event here.
 */
async function killAtFirst202 (t: any, env: Record<string, string>): Promise<{ accepted: string[], dir: string }> {
  const dir = t.testdir()
  const base = { DATA_DIR: dir, AUTH_CLIENTS_FILE: writeJson(dir, 'clients.json', [CLIENT]), ...env }
  const doomed = spawnGateway(t, ['start'], base)
  const port = Number((await doomed.waitFor('gateway listening'))['port'])
  const token = await login(`http://127.0.0.1:${port}`)
  const accepted: string[] = []
  let killed = false
  const sockets = await Promise.all(Array.from({ length: EVENTS }, () => rawConnect(port)))
  const answered = sockets.map((socket, i) => new Promise<void>(resolve => {
    const eventId = `evt-acked-${i}`
    socket.on('error', () => undefined)
    socket.once('close', () => resolve())
    socket.on('data', chunk => {
      if (!killed) {
        killed = true
        doomed.proc.kill('SIGKILL')
      }
      if (chunk.toString('latin1').startsWith('HTTP/1.1 202 ')) accepted.push(eventId)
    })
    const body = multipartBody([envelopePart(baseEnvelope({ event_id: eventId })), mediaPart(clip(2000).data)])
    socket.write(`POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`)
    socket.write(body)
  }))
  t.equal(await doomed.exit, null, 'killed by the signal')
  await Promise.all(answered)
  t.ok(accepted.length >= 1, `the first answer was a 202 (${accepted.length} arrived before the kill)`)

  const restarted = spawnGateway(t, ['start'], base)
  await restarted.waitFor('gateway listening')
  return { accepted, dir }
}

t.test('local bus: every event answered 202 before a kill -9 is published after the restart', async t => {
  const { accepted, dir } = await killAtFirst202(t, {})
  // Every event committed before the kill (the accepted ones and perhaps a few whose 202 was
  // still on its way), each once; settledBetween fails on more, however late they come.
  const ids = await settledBetween(async () => (await tailBus(dir, 'stream.events.v1')).map(m => m.value.event_id as string), accepted.length, EVENTS)
  for (const id of accepted) t.ok(ids.includes(id), `${id} answered 202 and published`)
  t.equal(new Set(ids).size, ids.length, 'none published twice')
})

t.test('Kafka: every event answered 202 before a kill -9 is published after the restart', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const topic = `evidence-acked-${randomUUID()}`
  const { accepted } = await killAtFirst202(t, { BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_EVIDENCE: topic })
  // At least once on Kafka (a copy may be published before the kill and again after the
  // restart); the relay publishes in order, so the accepted ones are among the first.
  const messages = await consumeBetween(infra.KAFKA_BROKERS, topic, accepted.length, 2 * EVENTS)
  const ids = messages.map(m => JSON.parse(m.value).event_id as string)
  for (const id of accepted) t.ok(ids.includes(id), `${id} answered 202 and published`)
  t.ok(messages.every(m => m.headers['message-id'] === `${CLIENT.client_id}/${JSON.parse(m.value).event_id}`), 'each copy carries the message-id to drop duplicates by')
})
