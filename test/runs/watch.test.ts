import t from 'tap'
import '../helpers/no-keepalive.js'
import { spawnGateway } from '../helpers/child.js'
import { startTestGateway } from '../helpers/gateway.js'
import { readSse, type SseEvent } from '../helpers/sse.js'

const tenant = (name: string): Record<string, string> => ({ 'x-svc-tenant-client-id': name })

async function start (url: string, body: object, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${url}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  return ((await res.json()) as { run_id: string }).run_id
}

/** Opens the watch and resolves once its first frame (`ready` or `reset`) is in; `next` reads on until `until` holds. */
async function watch (url: string, headers: Record<string, string> = {}) {
  const abort = new AbortController()
  const res = await fetch(`${url}/runs:watch`, { headers, signal: abort.signal })
  const events: SseEvent[] = []
  let wake: (() => void) | undefined
  const done = readSse(res, seen => {
    events.splice(0, events.length, ...seen)
    wake?.()
    return false
  }).catch(() => undefined)
  const until = async (ok: (events: SseEvent[]) => boolean): Promise<SseEvent[]> => {
    while (!ok(events)) await new Promise<void>(resolve => { wake = resolve })
    return events
  }
  await until(e => e.length > 0)
  return { res, events, until, close: async () => { abort.abort(); await done } }
}

const runEvents = (events: SseEvent[]): Array<{ id: string, type: string, run: string, status: string }> =>
  events.filter(e => e.event!.startsWith('run.')).map(e => {
    const body = JSON.parse(e.data!)
    return { id: e.id!, type: body.type, run: body.run_id, status: body.data.run.status }
  })

t.test('GET /runs:watch: ready, then every transition of the tenant\'s runs, and none of another tenant\'s', async t => {
  const { harnessUrl: url } = await startTestGateway(t)
  const w = await watch(url, tenant('acme'))
  t.equal(w.res.headers.get('content-type'), 'text/event-stream')
  t.equal(w.events[0]!.event, 'ready')
  t.match(w.events[0]!.id, /^[0-9a-z]+\.0$/)
  await start(url, { message: 'theirs', mode: 'echo' }, tenant('initech'))
  const id = await start(url, { message: 'mine', mode: 'echo', options: { steps: 2 } }, tenant('acme'))
  const seen = runEvents(await w.until(e => runEvents(e).some(r => r.type === 'run.completed')))
  t.same(seen.map(r => [r.run, r.type, r.status]), [[id, 'run.queued', 'queued'], [id, 'run.started', 'running'], [id, 'run.completed', 'succeeded']],
    'the lifecycle only (no steps), with the record as of each, and nothing of initech')
  const epoch = w.events[0]!.id!.split('.')[0]
  t.ok(seen.every(r => r.id.startsWith(`${epoch}.`)), 'ids carry the epoch')
  await w.close()
})

t.test('GET /runs:watch resumes after Last-Event-ID exactly; an id it cannot replay from gets reset', async t => {
  const { harnessUrl: url } = await startTestGateway(t)
  const h = tenant('acme')
  const first = await watch(url, h)
  const a = await start(url, { message: 'a', mode: 'echo' }, h)
  const got = runEvents(await first.until(e => runEvents(e).some(r => r.run === a && r.type === 'run.completed')))
  await first.close()
  const resumeAt = got[0]!.id
  const b = await start(url, { message: 'b', mode: 'echo' }, h)
  const c = await start(url, { message: 'c', mode: 'echo' }, h)
  const resumed = await watch(url, { ...h, 'last-event-id': resumeAt })
  const all = runEvents(await resumed.until(e => runEvents(e).filter(r => r.type === 'run.completed').length === 3))
  t.same(all.map(r => `${r.run === a ? 'a' : r.run === b ? 'b' : 'c'}:${r.type}`).filter(x => x.startsWith('a')), ['a:run.started', 'a:run.completed'], 'a from after the resume point, once')
  t.equal(all.filter(r => r.run === b).length, 3)
  t.equal(all.filter(r => r.run === c).length, 3)
  t.equal(new Set(all.map(r => r.id)).size, all.length, 'no id twice')
  await resumed.close()

  for (const other of ['zzz.5', `${resumeAt.split('.')[0]}.999999`]) {
    const reset = await watch(url, { ...h, 'last-event-id': other })
    t.equal(reset.events[0]!.event, 'reset', other)
    t.match(JSON.parse(reset.events[0]!.data!), { reason: /list again/ })
    await reset.close()
  }
  for (const bad of ['12', 'abc', '1.2.3', 'A.1', '-1', `x.${'9'.repeat(20)}`]) {
    const res = await fetch(`${url}/runs:watch`, { headers: { ...h, 'last-event-id': bad } })
    t.same([res.status, await res.json()], [400, { detail: 'Last-Event-ID must be an id of this feed (<epoch>.<n>)' }], bad)
  }
})

t.test('transitions are kept only for tenants that have watched: an id from before a tenant\'s first watch gets reset, not a replay with holes', async t => {
  const { harnessUrl: url } = await startTestGateway(t)
  const other = await watch(url, tenant('initech'))
  const start0 = other.events[0]!.id!
  const a = await start(url, { message: 'unwatched', mode: 'echo' }, tenant('acme'))
  const late = await watch(url, { ...tenant('acme'), 'last-event-id': start0 })
  t.equal(late.events[0]!.event, 'reset', 'acme had no watcher when its run began, so nothing of it was kept')
  await late.close()
  const resumeAt = late.events[0]!.id!
  const b = await start(url, { message: 'watched', mode: 'echo' }, tenant('acme'))
  const resumed = await watch(url, { ...tenant('acme'), 'last-event-id': resumeAt })
  const seen = runEvents(await resumed.until(e => runEvents(e).some(r => r.run === b && r.type === 'run.completed')))
  t.same(seen.filter(r => r.run === b).map(r => r.type), ['run.queued', 'run.started', 'run.completed'], 'from its first watch on, all of it')
  t.notOk(seen.some(r => r.run === a && r.type === 'run.queued'), 'and nothing from before')
  await resumed.close()
  await other.close()
})

t.test('a gateway that stops ends its watches at once, instead of waiting out the shutdown deadline for them', async t => {
  const child = spawnGateway(t, ['start'], { DATA_DIR: t.testdir(), SHUTDOWN_TIMEOUT_MS: '600000' })
  const url = `http://127.0.0.1:${(await child.waitFor('gateway listening'))['harnessPort']}`
  const w = await watch(url)
  child.proc.kill('SIGTERM')
  t.equal(await child.exit, 0)
  t.match(await child.waitFor('stopped'), { drained: true }, 'no request was left in flight at the deadline')
  await w.close()
})
