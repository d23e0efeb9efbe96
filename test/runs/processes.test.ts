import t from 'tap'
import '../helpers/no-keepalive.js'
import { spawnGateway, tailBus, type Child } from '../helpers/child.js'
import { eventually } from '../helpers/http.js'
import { readSse, type SseEvent } from '../helpers/sse.js'

const json = (res: Response): Promise<any> => res.json()

interface Node { child: Child, base: string }

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
  const res = await fetch(`${B.base}/runs/${cancelled}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
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
