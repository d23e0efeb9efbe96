import t from 'tap'
import '../helpers/no-keepalive.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { endOffsets } from '../helpers/kafka.js'
import { getRun, runsClusterEnv, runsState, settledLayout, startRun, startRunNode } from '../helpers/runs-cluster.js'
import { readSse } from '../helpers/sse.js'

const infra = sharedInfra(t)

t.test('a node joining a cluster with a run history reads only the partitions it is given', { skip: !infra }, async t => {
  const cluster = runsClusterEnv(infra!, {}, 8)
  const first = await startRunNode(t, cluster, 'n1')
  await settledLayout(cluster, [first])
  const count = 400
  const ids: string[] = []
  for (let i = 0; i < count; i += 50) ids.push(...await Promise.all(Array.from({ length: 50 }, () => startRun(first, { steps: 3 }))))
  await eventually(async () => (await getRun(first, ids.at(-1)!)).body.status, s => s === 'succeeded', 60_000)
  const total = [...(await endOffsets(infra!.KAFKA_BROKERS, cluster.topic)).values()].reduce((a, b) => a + b, 0n)

  const joinedAt = Date.now()
  const second = await startRunNode(t, cluster, 'n2')
  const owners = await settledLayout(cluster, [first, second])
  const mine = [...owners].filter(([, n]) => n === second).map(([p]) => p)
  // The node says it serves them over HTTP; its log lines come through a pipe of their own, a moment later or sooner.
  const tookUp = await eventually(async () => second.child.lines.filter(l => l['msg'] === 'runs partition taken up'), lines => lines.length >= mine.length, 10_000)
  t.same(tookUp.map(l => l['partition']).sort(), [...mine].sort(), 'it took up exactly the partitions it was given')
  const read = tookUp.reduce((n, l) => n + Number(l['to']) - Number(l['restoredFrom']), 0)
  t.ok(read > 0 && BigInt(read) < total, `it read ${read} of the ${total} offsets of the runs topic`)
  t.comment(`history: ${count} runs, ${total} offsets in ${cluster.partitions} partitions; the new node served ${mine.length} partitions ${Date.now() - joinedAt} ms after it was started, reading ${read} offsets (${tookUp.map(l => `${l['partition']}: ${l['ms']} ms`).join(', ')})`)
  const some = ids.slice(0, 20)
  const answers = await Promise.all(some.map(async id => (await getRun(second, id)).body.status))
  t.same(answers, some.map(() => 'succeeded'), 'and every run is read through it, from whichever owner')
})

t.test('WORKERS=2 in a cluster: /runs:watch on either worker shows every run of the tenant', { skip: !infra }, async t => {
  const cluster = runsClusterEnv(infra!)
  const node = await startRunNode(t, cluster, 'n1', { WORKERS: '2' })
  const other = await startRunNode(t, cluster, 'n2')
  await eventually(async () => Promise.all([node, other].map(runsState)), states => states.every(s => s !== undefined && s.starting.length === 0 && s.serving.length > 0), 60_000, 250)
  // Four watches, so that both workers (the kernel spreads connections over them) very likely hold some.
  const watches = await Promise.all([0, 1, 2, 3].map(async () => {
    const res = await fetch(`${node.base}/runs:watch`)
    t.equal(res.status, 200)
    return res
  }))
  const runs = await Promise.all(Array.from({ length: 12 }, () => startRun(other, { steps: 2 })))
  const seen = await Promise.all(watches.map(res => readSse(res, events => runs.every(id => events.some(e => e.event === 'run.completed' && JSON.parse(e.data!).run_id === id)))))
  for (const events of seen) {
    const completed = new Set(events.filter(e => e.event === 'run.completed').map(e => JSON.parse(e.data!).run_id as string))
    t.same(runs.filter(id => !completed.has(id)), [], 'each watch saw every run end, wherever it ran')
  }
  const pids = new Set(node.child.lines.filter(l => l['msg'] === 'joined the runs group').map(l => l['pid']))
  t.equal(pids.size, 2, 'the node\'s two workers are both members of the runs group')
})
