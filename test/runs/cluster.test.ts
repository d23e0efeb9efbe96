import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { spawnGateway, tailBus, type Child } from '../helpers/child.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { readSse, type SseEvent } from '../helpers/sse.js'

const json = (res: Response): Promise<any> => res.json()
const infra = sharedInfra(t)

interface Node { child: Child, base: string }

/** A harness-only gateway in cluster mode (BUS=kafka, STORAGE=s3) with its own DATA_DIR and port. */
async function node (t: { teardown(fn: () => unknown): void }, env: Record<string, string>): Promise<Node> {
  const child = spawnGateway(t, ['start'], { ...env, DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-node-')), ROLES: 'harness' })
  const { harnessPort } = await child.waitFor('gateway listening') as { harnessPort: number }
  return { child, base: `http://127.0.0.1:${harnessPort}` }
}

const start = async (n: Node, options: object): Promise<string> =>
  (await json(await fetch(`${n.base}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'shared', mode: 'echo', options }) }))).run_id
const get = async (n: Node, id: string): Promise<{ status: number, body: any }> => {
  const res = await fetch(`${n.base}/runs/${id}`)
  return { status: res.status, body: await json(res) }
}
const stream = (n: Node, id: string, lastEventId?: string): Promise<Response> =>
  fetch(`${n.base}/runs/${id}/stream`, { headers: lastEventId === undefined ? {} : { 'last-event-id': lastEventId } })
const ids = (events: SseEvent[]): number[] => events.map(e => Number(e.id))
const dense = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i)

t.test('three nodes sharing Kafka and MinIO: a run is read, streamed, resumed and cancelled through any node, and ends when its node dies', { skip: !infra }, async t => {
  const suffix = randomUUID()
  const env = {
    ...infra!,
    BUS: 'kafka',
    STORAGE: 's3',
    S3_FORCE_PATH_STYLE: 'true',
    S3_BUCKET: `runs-${suffix}`,
    KAFKA_TOPIC_PARTITIONS: '3',
    // Widens the gap between a start's commit and its first event on Kafka, which a read on another node must not fall into.
    HARNESS_PUBLISH_LINGER_MS: '300',
    TOPIC_RUNS: `runs-${suffix}`,
    TOPIC_RUNS_CONTROL: `control-${suffix}`,
    TOPIC_TELEMETRY: `telemetry-${suffix}`,
    TOPIC_EVIDENCE: `evidence-${suffix}`
  }
  const [one, two, three] = await Promise.all([node(t, env), node(t, env), node(t, env)])

  t.test('started on node 1, streamed from node 2, resumed on node 3 with Last-Event-ID: every event once, in order', async t => {
    const id = await start(one, { steps: 30, delay_ms: 100 })
    // No waiting before the first read: node 1 answered once the run was on Kafka, and a miss waits for node 2's consumer to reach the log's end.
    const first = await get(two, id)
    t.equal(first.status, 200, 'node 2 knows the run as soon as node 1 answered')
    t.equal(first.body.run_id, id)
    const part = await readSse(await stream(two, id), events => events.length >= 5)
    t.same(ids(part), dense(1, part.length), 'node 2 streamed from the start, live')
    t.notOk(part.some(e => e.event === 'run.completed'), 'while the run was in flight')
    const rest = await readSse(await stream(three, id, part.at(-1)!.id))
    t.equal(rest.at(-1)!.event, 'run.completed', 'node 3 streamed it to its end')
    const all = [...ids(part), ...ids(rest)]
    t.same(all, dense(1, all.length), 'no duplicate, no gap across the two nodes')
    const [a, b, c] = await Promise.all([get(one, id), get(two, id), get(three, id)])
    t.equal(a.body.status, 'succeeded')
    t.same(b.body, a.body, 'node 2 has the same record and events as the owner')
    t.same(c.body, a.body, 'node 3 too')
    t.same(c.body.events.map((e: any) => e.id), all.map(String), 'the stored events are the streamed ones')
    const after = await readSse(await stream(two, id, String(all.length)))
    t.same(after, [], 'a stream resumed after the end ends at once on another node')
  })

  t.test('a run of node 1 cancelled through node 2', async t => {
    const id = await start(one, { steps: 1000, delay_ms: 50 })
    await eventually(async () => (await get(two, id)).body.status, s => s === 'running')
    const res = await fetch(`${two.base}/runs/${id}/cancel`, { method: 'POST' })
    const body = await json(res)
    t.equal(res.status, 200, JSON.stringify(body).slice(0, 200))
    t.equal(body.status, 'cancelled', 'node 2 answers with the cancelled record')
    t.match(body.events.at(-1), { type: 'run.failed', data: { reason: 'cancelled' } })
    t.equal((await get(one, id)).body.status, 'cancelled', 'the owner cancelled it')
    t.equal((await eventually(async () => (await get(three, id)).body.status, s => s === 'cancelled')), 'cancelled', 'node 3 sees it')
    const again = await fetch(`${three.base}/runs/${id}/cancel`, { method: 'POST' })
    t.same([again.status, await json(again)], [409, { detail: 'run_not_in_flight:cancelled' }], 'a cancel of the ended run, through another node, is 409')
  })

  t.test('node 1 killed -9 mid-run: the run ends (failed, interrupted) on nodes 2 and 3, and their streams end', async t => {
    const id = await start(one, { steps: 100_000, delay_ms: 50 })
    await eventually(async () => (await get(three, id)).body.last_event_id, n => n >= 5)
    const live = readSse(await stream(three, id))
    one.child.proc.kill('SIGKILL')
    t.equal(await one.child.exit, null, 'killed')
    const killedAt = Date.now()
    const ended = await eventually(async () => (await get(two, id)).body, r => r.status === 'failed', 30_000, 250)
    t.match(ended, { status: 'failed', error: { code: 'interrupted' } }, `node 2 sees the end within 30 s (${Date.now() - killedAt} ms)`)
    const events = await live
    t.match(JSON.parse(events.at(-1)!.data!), { type: 'run.failed', data: { reason: 'interrupted' } }, 'node 3\'s live stream ended with it')
    t.same(ids(events), dense(1, events.length), 'with every event before it, once')
    const three3 = (await get(three, id)).body
    t.same(three3, (await get(two, id)).body, 'nodes 2 and 3 agree on the whole run')
  })
})

t.test('two processes on one DATA_DIR (local bus): a run of A is streamed live, cancelled and ended through B', async t => {
  const dir = t.testdir()
  const env = { DATA_DIR: dir, ROLES: 'harness' }
  const a = spawnGateway(t, ['start'], env)
  const b = spawnGateway(t, ['start'], env)
  const { harnessPort: portA } = await a.waitFor('gateway listening') as { harnessPort: number }
  const { harnessPort: portB } = await b.waitFor('gateway listening') as { harnessPort: number }
  const A: Node = { child: a, base: `http://127.0.0.1:${portA}` }
  const B: Node = { child: b, base: `http://127.0.0.1:${portB}` }

  const streamed = await start(A, { steps: 20, delay_ms: 50 })
  const events = await readSse(await stream(B, streamed))
  t.equal(events.at(-1)!.event, 'run.completed', 'B streamed the run of A to its end')
  t.same(ids(events), dense(1, events.length), 'every event once, in order')
  t.same((await get(B, streamed)).body.events.length, events.length)

  const cancelled = await start(A, { steps: 1000, delay_ms: 50 })
  await eventually(async () => (await get(B, cancelled)).body.status, s => s === 'running')
  const res = await fetch(`${B.base}/runs/${cancelled}/cancel`, { method: 'POST' })
  t.equal(res.status, 200)
  t.equal((await json(res)).status, 'cancelled', 'B cancelled the run A executes')
  t.equal((await get(A, cancelled)).body.status, 'cancelled')

  const orphan = await start(A, { steps: 100_000, delay_ms: 50 })
  await eventually(async () => (await get(B, orphan)).body.last_event_id, n => n >= 4)
  const live = readSse(await stream(B, orphan))
  a.proc.kill('SIGKILL')
  await a.exit
  const tail = await live
  t.match(JSON.parse(tail.at(-1)!.data!), { type: 'run.failed', data: { reason: 'interrupted' } }, 'B ended the run of the dead process, and its stream on B ended')
  t.same(ids(tail), dense(1, tail.length))
  b.proc.kill('SIGTERM')
  t.equal(await b.exit, 0)
  const published = (await tailBus(dir, 'harness.runs.v1')).filter(m => m.key === orphan)
  t.match(published.at(-1)!.value, { type: 'run.failed', data: { reason: 'interrupted' } }, 'and its end is published')
  t.same([...new Set(published.map(m => Number(m.value.seq)))], dense(1, tail.length), 'with every event before it')
})
