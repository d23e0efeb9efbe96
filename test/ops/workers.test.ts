import t from 'tap'
import { randomUUID } from 'node:crypto'
import { createServer, type AddressInfo } from 'node:net'
import '../helpers/no-keepalive.js'
import { spawnGateway, tailBus } from '../helpers/child.js'
import { checkPublished, killOneWorker } from '../helpers/workers.js'

t.test('WORKERS=2 on the local bus: /metrics covers both, a worker killed -9 comes back, every 200 is in the log', async t => {
  const topic = `telemetry-${randomUUID()}`
  const dir = t.testdir()
  const ok = await killOneWorker(t, dir, { TOPIC_TELEMETRY: topic })
  const published = await tailBus(dir, topic)
  checkPublished(t, ok, published)
  t.same(published.map(m => m.offset), published.map((_, i) => i), 'appends from both workers got dense offsets, in order')
})

t.test('a worker that cannot start stops the supervisor, which exits 1', async t => {
  const dir = t.testdir({ 'not-a-key.pem': 'not a PEM key' })
  // Read by each worker as it starts, after the supervisor has checked the configuration and the ports.
  const gw = spawnGateway(t, ['start'], { DATA_DIR: dir, WORKERS: '2', AUTH_SIGNING_KEY_FILE: `${dir}/not-a-key.pem` })
  t.equal(await gw.exit, 1)
  t.ok(gw.lines.some(l => l['msg'] === 'worker failed to start'), 'the supervisor says why')
})

t.test('a port in use stops the supervisor before it forks, naming the port', async t => {
  // A listener without SO_REUSEPORT: the workers could not share its port, nor should they join a gateway's.
  const taken = createServer()
  await new Promise<void>(resolve => taken.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { taken.close() })
  const port = (taken.address() as AddressInfo).port
  const gw = spawnGateway(t, ['start'], { DATA_DIR: t.testdir(), WORKERS: '2', PORT: String(port) })
  t.equal(await gw.exit, 1)
  t.match(gw.stderr(), `EADDRINUSE: PORT=${port} on 127.0.0.1`)
  t.notOk(gw.lines.some(l => l['msg'] === 'gateway listening'), 'no worker started')
})
