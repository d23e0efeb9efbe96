import t from 'tap'
import '../helpers/no-keepalive.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { getRun, partitionOf, runsClusterEnv, settledLayout, startRun, startRunNode, streamRun, type RunNode } from '../helpers/runs-cluster.js'
import { readSse, type SseEvent } from '../helpers/sse.js'

const infra = sharedInfra(t)
const dense = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** Follows a run to its end as an EventSource would: on any node, resuming after the last id whenever a stream ends early. */
async function followToEnd (nodes: RunNode[], id: string, log: (line: string) => void): Promise<SseEvent[]> {
  const events: SseEvent[] = []
  for (let attempt = 0; attempt < 200; attempt++) {
    const node = nodes[attempt % nodes.length]!
    const res = await streamRun(node, id, events.at(-1)?.id).catch(() => undefined)
    if (res?.status !== 200) {
      log(`stream of ${id} on ${node.name}: ${res?.status ?? 'no answer'}`)
      await res?.body?.cancel()
      await new Promise(resolve => setTimeout(resolve, 200))
      continue
    }
    events.push(...await readSse(res).catch(() => []))
    if (events.at(-1)?.event === 'run.completed' || events.at(-1)?.event === 'run.failed') return events
  }
  throw new Error(`${id} was not followed to its end`)
}

t.test('partitions moving while clients read, stream and cancel', { skip: !infra }, async t => {
  const cluster = runsClusterEnv(infra!)
  const first = await Promise.all(['n1', 'n2'].map(name => startRunNode(t, cluster, name)))
  let owners = await settledLayout(cluster, first)
  const runs = await Promise.all(Array.from({ length: 8 }, () => startRun(first[0]!, { steps: 40, delay_ms: 100 })))
  const doomed = await startRun(first[1]!, { steps: 100_000, delay_ms: 100 })

  // Readers on both first nodes, in a loop, until the rebalance below has settled.
  const seen = new Map<number, number>()
  let reading = true
  const readers = first.map(async node => {
    while (reading) {
      for (const id of runs) {
        const { status } = await getRun(node, id)
        seen.set(status, (seen.get(status) ?? 0) + 1)
      }
    }
  })
  const notes: string[] = []
  const streams = runs.map(id => followToEnd(first, id, line => notes.push(line)))

  // A third and a fourth node join: a rebalance moves partitions while all of that goes on, and a cancel is sent meanwhile.
  const joining = Promise.all(['n3', 'n4'].map(name => startRunNode(t, cluster, name)))
  const cancel = await fetch(`${first[0]!.base}/runs/${doomed}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
  const cancelBody = await cancel.json() as { status?: string, detail?: string }
  const nodes = [...first, ...await joining]
  owners = await settledLayout(cluster, nodes)
  reading = false
  await Promise.all(readers)

  t.notOk(seen.has(404), `no read of an existing run was answered 404 (answers: ${JSON.stringify(Object.fromEntries(seen))})`)
  t.same([...seen.keys()].filter(s => s !== 200 && s !== 503), [], 'only 200, or 503 while a partition was being taken up')
  const followed = await Promise.all(streams)
  let interrupted = 0
  for (const [i, events] of followed.entries()) {
    t.same(events.map(e => Number(e.id)), dense(1, events.length), `${runs[i]}: every event once, in order, across resumes`)
    const end = JSON.parse(events.at(-1)!.data!) as { type: string, data: { reason?: string } }
    // A run whose partition moved while it ran is ended by the new owner (docs/scaling.md); the others complete.
    if (end.type === 'run.failed') interrupted++
    t.ok(end.type === 'run.completed' || end.data.reason === 'interrupted', `${runs[i]} ended ${end.type} ${end.data.reason ?? ''}`)
  }
  t.comment(`${interrupted} of ${runs.length} runs were in partitions that moved and ended interrupted`)
  t.comment(`streams resumed: ${notes.length} (${[...new Set(notes.map(n => n.replace(/run-\S+ /, '')))].join('; ')})`)
  t.ok(cancel.status === 200 || cancel.status === 503, `the cancel sent while partitions moved: ${cancel.status} ${JSON.stringify(cancelBody).slice(0, 200)}`)
  const ended = await eventually(async () => (await getRun(nodes[3]!, doomed)).body, r => r.status !== 'running' && r.status !== 'queued', 20_000, 250)
  t.equal(ended.status, 'cancelled', 'the run is cancelled, whichever owner took the command (a 503 said it would be)')
  if (cancel.status === 503) t.equal(cancelBody.detail, 'run_cancel_pending')

  await t.test('a run owned by one node, cancelled through each other node in turn', async t => {
    const id = await startRun(nodes[0]!, { steps: 100_000, delay_ms: 100 })
    const owner = owners.get(partitionOf(cluster, id))!
    await eventually(async () => (await getRun(owner, id)).body.status, s => s === 'running')
    const others = nodes.filter(n => n !== owner)
    const answers: Array<{ status: number, body: any }> = []
    for (const n of others) {
      const res = await fetch(`${n.base}/runs/${id}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' } })
      answers.push({ status: res.status, body: await res.json() })
    }
    t.equal(answers[0]!.status, 200, 'the first cancel takes it')
    t.equal(answers[0]!.body.status, 'cancelled')
    t.same(answers.slice(1), answers.slice(1).map(() => ({ status: 409, body: { detail: 'run_not_in_flight:cancelled' } })), 'the next ones, through other nodes, are told it is no longer in flight')
    t.equal((await getRun(owner, id)).body.status, 'cancelled')
  })
})
