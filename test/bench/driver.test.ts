import t from 'tap'
// @ts-expect-error: the load tool is plain JavaScript, without types
import { drive } from '../../bench/load/driver.mjs'

const timers = (): number => process.getActiveResourcesInfo().filter(r => r === 'Timeout').length

t.test('once every answer is in, the load tool holds no timer: it exits then, not at the request deadline', async t => {
  const answered: string[] = []
  const rec = {
    inFlight: 0,
    sent () {},
    answered (_kind: string, _at: number, _latency: number, status: string) { answered.push(status) },
    failed () {},
    notSent () {}
  }
  const pool = { request: async () => ({ statusCode: 200, body: { dump: async () => {}, text: async () => '' } }) }
  const before = timers()
  const run = await drive({
    pool,
    rate: 100,
    duration: 0.05,
    nextKind: () => 'telemetry',
    builders: { telemetry: () => ({ method: 'POST', path: '/', headers: {}, body: '', expect: 200 }) },
    session: { current: async () => ({ token: 'x', generation: 0 }), refresh () {} },
    rec,
    timeoutMs: 600_000,
    maxInFlight: 10,
    stop: { stopped: false }
  })
  t.same([run.scheduled, run.unfinished], [5, 0])
  t.same(answered, ['200', '200', '200', '200', '200'])
  t.equal(timers(), before, 'no timer is left pending')
})
