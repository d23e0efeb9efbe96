import t from 'tap'
import '../helpers/no-keepalive.js'
import { StreamBudget } from '../../src/runs/stream-budget.js'
import { startTestGateway } from '../helpers/gateway.js'

t.test('a place per stream, per tenant and in all; a place given back twice counts once', async t => {
  const budget = new StreamBudget(3, 2)
  const a1 = budget.take('a')
  budget.take('a')
  t.throws(() => budget.take('a'), { code: 'too_many_streams', headers: { 'retry-after': '5' }, details: { detail: 'at most 2 for this tenant open at once' } })
  budget.take('b')
  t.throws(() => budget.take('c'), { code: 'too_many_streams', details: { detail: 'at most 3 in this process open at once' } })
  a1()
  a1()
  budget.take('c')
  t.throws(() => budget.take('d'), { code: 'too_many_streams' }, 'the place given back twice freed one, not two')
})

t.test('run streams and watch feeds of one tenant past its bound get 429 too_many_streams; another tenant\'s and a closed one\'s place are served', async t => {
  const { harnessUrl: url } = await startTestGateway(t, { HARNESS_MAX_STREAMS_PER_TENANT: '2' })
  const acme = { 'x-svc-tenant-client-id': 'acme' }
  const started = await fetch(`${url}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json', ...acme }, body: JSON.stringify({ message: 'm', mode: 'echo', options: { steps: 1000, delay_ms: 1000 } }) })
  const { run_id: id } = await started.json() as { run_id: string }
  const open: AbortController[] = []
  const get = async (path: string, headers: Record<string, string>): Promise<Response> => {
    const abort = new AbortController()
    open.push(abort)
    return fetch(`${url}${path}`, { headers, signal: abort.signal })
  }
  t.teardown(() => { for (const a of open) a.abort() })
  t.equal((await get(`/runs/${id}/stream`, acme)).status, 200)
  t.equal((await get('/runs:watch', acme)).status, 200)
  const refused = await get(`/runs/${id}/stream`, acme)
  t.equal(refused.status, 429)
  t.equal(refused.headers.get('retry-after'), '5')
  t.same(await refused.json(), { detail: 'too_many_streams' }, 'the harness\'s error shape, with the code')
  t.equal((await get('/runs:watch', acme)).status, 429, 'a watch feed counts the same')
  t.equal((await get('/runs:watch', { 'x-svc-tenant-client-id': 'initech' })).status, 200, 'another tenant is served')
  open[0]!.abort()
  let status = 0
  for (let i = 0; i < 100 && status !== 200; i++) {
    const res = await get(`/runs/${id}/stream`, acme)
    status = res.status
    if (status !== 200) await res.arrayBuffer()
  }
  t.equal(status, 200, 'a closed stream gives its place back')
  await fetch(`${url}/runs/${id}/cancel`, { method: 'POST', headers: acme })
})
