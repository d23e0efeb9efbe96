import t from 'tap'
import '../helpers/no-keepalive.js'
import { spawnGateway, tailBus } from '../helpers/child.js'
import { eventually } from '../helpers/http.js'
import { readSse } from '../helpers/sse.js'

t.test('after kill -9, a run that was in flight ends failed (interrupted) and its stream replays', async t => {
  const dir = t.testdir()
  const first = spawnGateway(t, ['start'], { DATA_DIR: dir })
  const { harnessPort } = await first.waitFor('gateway listening') as { harnessPort: number }
  const base = `http://127.0.0.1:${harnessPort}`
  const started = await (await fetch(`${base}/runs:start`, { method: 'POST', body: JSON.stringify({ message: 'long', mode: 'echo', options: { steps: 1000, delay_ms: 20 } }) })).json() as { run_id: string }
  const id = started.run_id
  const running = await eventually(async () => (await fetch(`${base}/runs/${id}`)).json() as Promise<any>, r => r.last_event_id >= 4)
  t.equal(running.status, 'running')

  first.proc.kill('SIGKILL')
  t.equal(await first.exit, null, 'killed, not exited')

  const second = spawnGateway(t, ['start'], { DATA_DIR: dir })
  const { harnessPort: port2 } = await second.waitFor('gateway listening') as { harnessPort: number }
  const base2 = `http://127.0.0.1:${port2}`
  const record = await (await fetch(`${base2}/runs/${id}`)).json() as any
  t.match(record, { run_id: id, status: 'failed', error: { code: 'interrupted' } })
  t.ok(record.ended_at)

  const events = await readSse(await fetch(`${base2}/runs/${id}/stream`))
  t.same(events.slice(0, 2).map(e => e.event), ['run.queued', 'run.started'])
  t.equal(events.at(-1)!.event, 'run.failed', 'the replay ends with the terminal event, then the stream closes')
  t.same(events.map(e => Number(e.id)), events.map((_, i) => i + 1), 'ids are dense: nothing lost before the crash')
  const published = await eventually(async () => (await tailBus(dir, 'harness.runs.v1')).filter(m => m.key === id), m => m.at(-1)?.value.type === 'run.failed')
  t.match(published.at(-1)!.value, { type: 'run.failed', id: events.at(-1)!.id, data: { reason: 'interrupted' } }, 'its end is published on TOPIC_RUNS')
  t.same([...new Set(published.map(m => Number(m.value.seq)))], events.map((_, i) => i + 1), 'with every event before it')
  second.proc.kill('SIGTERM')
  t.equal(await second.exit, 0)
})

t.test('SIGTERM with a run in flight: it ends failed (interrupted), stored before exit', async t => {
  const dir = t.testdir()
  const first = spawnGateway(t, ['start'], { DATA_DIR: dir })
  const { harnessPort } = await first.waitFor('gateway listening') as { harnessPort: number }
  const base = `http://127.0.0.1:${harnessPort}`
  const { run_id: id } = await (await fetch(`${base}/runs:start`, { method: 'POST', body: JSON.stringify({ message: 'x', mode: 'echo', options: { steps: 1000, delay_ms: 20 } }) })).json() as { run_id: string }
  await eventually(async () => (await fetch(`${base}/runs/${id}`)).json() as Promise<any>, r => r.status === 'running')
  first.proc.kill('SIGTERM')
  t.equal(await first.exit, 0)
  const second = spawnGateway(t, ['start'], { DATA_DIR: dir })
  const { harnessPort: port2 } = await second.waitFor('gateway listening') as { harnessPort: number }
  t.match(await (await fetch(`http://127.0.0.1:${port2}/runs/${id}`)).json(), { status: 'failed', error: { code: 'interrupted' } })
  t.notOk(second.lines.some(l => l['msg'] === 'runs in flight at the last stop were marked failed (interrupted)'), 'nothing was left for recovery to do')
  t.match(second.lines.find(l => l['msg'] === 'run events left unpublished at the last stop are being published'), { runs: 0, events: 0 }, 'nor for the relay')
  const published = (await tailBus(dir, 'harness.runs.v1')).filter(m => m.key === id).map(m => Number(m.value.seq))
  t.same(published, published.map((_, i) => i + 1), 'every event was published once, before the exit')
  second.proc.kill('SIGTERM')
  t.equal(await second.exit, 0)
})
