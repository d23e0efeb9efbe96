import t, { type Test } from 'tap'
import '../helpers/no-keepalive.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { consumeSettled, type Consumed } from '../helpers/kafka.js'
import { getRun, partitionOf, runsClusterEnv, settledLayout, startRun, startRunNode, streamRun, type RunNode } from '../helpers/runs-cluster.js'
import { readSse, type SseEvent } from '../helpers/sse.js'

const infra = sharedInfra(t)
const ids = (events: SseEvent[]): number[] => events.map(e => Number(e.id))
const dense = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const TERMINAL = new Set(['run.completed', 'run.failed'])

/**
 * What the runs topic, read read_committed, must hold of every run: each
 * sequence number once, from 1 without a gap, and exactly one end, last.
 */
function checkLog (t: Test, messages: Consumed[], runIds: readonly string[]): void {
  const byRun = new Map<string, Array<{ seq: number, type: string, value: string }>>()
  for (const m of messages) {
    const e = JSON.parse(m.value) as { seq: number, type: string }
    byRun.set(m.key, [...(byRun.get(m.key) ?? []), { seq: e.seq, type: e.type, value: m.value }])
  }
  for (const id of runIds) {
    const events = byRun.get(id) ?? []
    const seqs = events.map(e => e.seq)
    t.same(seqs, dense(1, seqs.length), `${id}: every sequence number once, in order, none with two contents`)
    t.equal(events.filter(e => TERMINAL.has(e.type)).length, 1, `${id}: exactly one end`)
    t.ok(TERMINAL.has(events.at(-1)?.type ?? ''), `${id}: nothing after its end`)
  }
}

t.test('three nodes, each in its own pid namespace, on one Kafka', { skip: !infra }, async t => {
  const cluster = runsClusterEnv(infra!)
  const nodes = await Promise.all(['n1', 'n2', 'n3'].map(name => startRunNode(t, cluster, name)))
  const [one, two, three] = nodes as [RunNode, RunNode, RunNode]
  let owners = await settledLayout(cluster, nodes)

  await t.test('a run accepted by one node is read at once, streamed and resumed through the others', async t => {
    const id = await startRun(one, { steps: 30, delay_ms: 50 })
    const first = await getRun(two, id)
    t.equal(first.status, 200, 'known through another node as soon as the start was accepted (never 404)')
    const part = await readSse(await streamRun(two, id), events => events.length >= 5)
    t.same(ids(part), dense(1, part.length), 'streamed from its start')
    const rest = await readSse(await streamRun(three, id, part.at(-1)!.id))
    t.equal(rest.at(-1)!.event, 'run.completed', 'resumed elsewhere to its end')
    const all = [...ids(part), ...ids(rest)]
    t.same(all, dense(1, all.length), 'no duplicate, no gap across nodes')
    const records = await Promise.all(nodes.map(n => getRun(n, id)))
    t.same(records.map(r => r.body), records.map(() => records[0]!.body), 'every node answers the same record and events')
    t.same(records[0]!.body.events.map((e: any) => e.id), all.map(String))
    const list = await (await fetch(`${three.base}/runs?limit=200`)).json() as { runs: Array<{ run_id: string }> }
    t.ok(list.runs.some(r => r.run_id === id), 'listed through any node')
  })

  await t.test('a run owned by one node is cancelled through another', async t => {
    const id = await startRun(one, { steps: 1000, delay_ms: 50 })
    const owner = owners.get(partitionOf(cluster, id))!
    const other = nodes.find(n => n !== owner)!
    await eventually(async () => (await getRun(other, id)).body.status, s => s === 'running')
    const res = await fetch(`${other.base}/runs/${id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
    const body = await res.json() as any
    t.equal(res.status, 200, JSON.stringify(body).slice(0, 300))
    t.equal(body.status, 'cancelled')
    t.match(body.events.at(-1), { type: 'run.failed', data: { reason: 'cancelled' } })
    const again = await fetch(`${owner.base}/runs/${id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
    t.same([again.status, await again.json()], [409, { detail: 'run_not_in_flight:cancelled' }], 'a second cancel through the owner is 409')
  })

  await t.test('an owner frozen past its session: its runs end once, on every node, and a stream resumes elsewhere to the end', async t => {
    const started = await Promise.all(Array.from({ length: 12 }, () => startRun(one, { steps: 100_000, delay_ms: 100 })))
    const frozen = owners.get(partitionOf(cluster, started[0]!))!
    const others = nodes.filter(n => n !== frozen)
    const mine = started.filter(id => owners.get(partitionOf(cluster, id)) === frozen)
    t.ok(mine.length >= 1, `${mine.length} of the runs are owned by the node to freeze`)
    for (const id of mine) await eventually(async () => (await getRun(frozen, id)).body.last_event_id, n => n >= 3)
    const watched = mine[0]!
    const before = await readSse(await streamRun(frozen, watched), events => events.length >= 3)
    const lastSeen = before.at(-1)!.id!

    await frozen.child.signal('SIGSTOP')
    const frozenAt = Date.now()
    for (const id of mine) {
      const ended = await eventually(async () => (await getRun(others[0]!, id)).body, r => r.status === 'failed', cluster.sessionMs + 20_000, 250)
      t.match(ended, { status: 'failed', error: { code: 'interrupted' } }, `${id} ended (interrupted) by the partition's new owner`)
    }
    t.comment(`the frozen node's runs were ended elsewhere ${Date.now() - frozenAt} ms after the freeze (session ${cluster.sessionMs} ms)`)
    const rest = await readSse(await streamRun(others[1]!, watched, lastSeen))
    t.same(ids(rest), dense(Number(lastSeen) + 1, Number(lastSeen) + rest.length), 'resumed on another node right after the last id the frozen node sent')
    t.match(JSON.parse(rest.at(-1)!.data!), { type: 'run.failed', data: { reason: 'interrupted' } }, 'through the end')
    // Frozen well past the session, as a long GC pause or a VM migration would.
    await new Promise(resolve => setTimeout(resolve, Math.max(0, frozenAt + 3 * cluster.sessionMs - Date.now())))
    await frozen.child.signal('SIGCONT')

    owners = await settledLayout(cluster, nodes)
    t.ok([...owners.values()].includes(frozen), 'the thawed node joined again and serves partitions')
    const views = await Promise.all(started.map(async id => Promise.all(nodes.map(async n => {
      const { status, body } = await getRun(n, id)
      return status === 200 ? body.status : `${status} ${JSON.stringify(body)}`
    }))))
    for (const [i, statuses] of views.entries()) t.same(statuses, statuses.map(() => statuses[0]), `${started[i]}: every node reports ${statuses[0]}`)
    for (const id of started.filter(id => !mine.includes(id))) await fetch(`${one.base}/runs/${id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
    const messages = await consumeSettled(infra!.KAFKA_BROKERS, cluster.topic, 1, 3000)
    checkLog(t, messages, started)
  })

  await t.test('an owner killed -9: each of its runs ends once within the session timeout and 10 s, seen on every node', async t => {
    const started = await Promise.all(Array.from({ length: 12 }, () => startRun(two, { steps: 100_000, delay_ms: 100 })))
    const victim = owners.get(partitionOf(cluster, started[0]!))!
    const survivors = nodes.filter(n => n !== victim)
    const mine = started.filter(id => owners.get(partitionOf(cluster, id)) === victim)
    for (const id of mine) await eventually(async () => (await getRun(victim, id)).body.status, s => s === 'running')
    await victim.child.signal('SIGKILL')
    const killedAt = Date.now()
    for (const id of mine) {
      for (const n of survivors) {
        const ended = await eventually(async () => (await getRun(n, id)).body, r => r.status === 'failed', cluster.sessionMs + 10_000 - (Date.now() - killedAt), 250)
        t.match(ended, { error: { code: 'interrupted' } }, `${id} ended, seen on ${n.name}`)
      }
    }
    t.comment(`the killed node's runs were seen ended everywhere ${Date.now() - killedAt} ms after the kill (session ${cluster.sessionMs} ms)`)
    for (const id of started.filter(id => !mine.includes(id))) await fetch(`${survivors[0]!.base}/runs/${id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
    const messages = await consumeSettled(infra!.KAFKA_BROKERS, cluster.topic, 1, 3000)
    checkLog(t, messages, started)
  })
})
