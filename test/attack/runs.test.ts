import t from 'tap'
import { request } from 'node:http'
import { performance } from 'node:perf_hooks'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { readSse } from '../helpers/sse.js'

/**
 * The harness's shared resources against one principal (issue 38, rows 2,
 * 3, 4, 5 and 10): each attack runs against a real gateway while an honest
 * client of another tenant asks for what it needs; what the honest client
 * saw is printed, never asserted as a time.
 */

const JSON_HEADERS = { 'content-type': 'application/json' }
const tenant = (name: string): Record<string, string> => ({ 'x-svc-tenant-client-id': name })

/** A POST from a given loopback address, as another machine's client would be. */
async function postFrom (address: string, url: string, body: object, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', localAddress: address, headers: { ...JSON_HEADERS, ...headers } }, res => { res.resume(); res.on('end', () => resolve(res.statusCode!)) })
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

async function timed (what: () => Promise<Response>): Promise<{ status: number, ms: number }> {
  const start = performance.now()
  const res = await what()
  await res.arrayBuffer()
  return { status: res.status, ms: Math.round(performance.now() - start) }
}

t.test('row 2: one tenant opening streams past its bound gets 429; another tenant is served', async t => {
  const { harnessUrl: url } = await startTestGateway(t, { HARNESS_MAX_STREAMS_PER_TENANT: '100' })
  const aborts: AbortController[] = []
  t.teardown(() => { for (const a of aborts) a.abort() })
  const statuses = await Promise.all(Array.from({ length: 150 }, async () => {
    const abort = new AbortController()
    aborts.push(abort)
    const res = await fetch(`${url}/runs:watch`, { headers: tenant('mallory'), signal: abort.signal })
    if (res.status !== 200) await res.arrayBuffer()
    return res.status
  }))
  t.equal(statuses.filter(s => s === 200).length, 100)
  t.equal(statuses.filter(s => s === 429).length, 50)
  const honest = await timed(async () => fetch(`${url}/runs:start`, { method: 'POST', headers: { ...JSON_HEADERS, ...tenant('honest') }, body: JSON.stringify({ message: 'm', mode: 'echo' }) }))
  t.equal(honest.status, 202)
  const abort = new AbortController()
  aborts.push(abort)
  t.equal((await fetch(`${url}/runs:watch`, { headers: tenant('honest'), signal: abort.signal })).status, 200, 'the honest tenant can watch')
  t.comment(`honest POST /runs:start during 100 open feeds of another tenant: ${honest.ms} ms`)
})

t.test('rows 3 and 4: runs of 64 KiB messages and 1,000 steps: pages and records stay small, and the steps do not copy the message', async t => {
  const { harnessUrl: url } = await startTestGateway(t)
  const big = 'x'.repeat(64 * 1024)
  const ids: string[] = []
  for (let i = 0; i < 20; i++) {
    const res = await fetch(`${url}/runs`, { method: 'POST', headers: { ...JSON_HEADERS, ...tenant('mallory') }, body: JSON.stringify({ message: big, mode: 'echo', options: { steps: i === 0 ? 1000 : 1 } }) })
    const body = await res.text()
    if (i === 0) t.ok(body.length < 2 * 1024 * 1024, `a synchronous answer of a 1,000-step run of a 64 KiB message: ${body.length} bytes`)
    ids.push((JSON.parse(body) as { run_id: string }).run_id)
  }
  const page = await (await fetch(`${url}/runs?limit=200`, { headers: tenant('mallory') })).text()
  t.equal((JSON.parse(page) as { runs: unknown[] }).runs.length, 20)
  t.ok(page.length < 200 * 1024, `a page of 20 such runs: ${page.length} bytes`)
  const record = await (await fetch(`${url}/runs/${ids[0]}`, { headers: tenant('mallory') })).text()
  t.ok(record.length < 2 * 1024 * 1024, `the record of the 1,000-step run: ${record.length} bytes`)
  const events = await readSse(await fetch(`${url}/runs/${ids[0]}/stream`, { headers: tenant('mallory') }))
  const stored = events.reduce((n, e) => n + e.data!.length, 0)
  t.equal(events.length, 1003)
  t.ok(stored < 4 * big.length + 1000 * 1024, `its events, as stored and streamed: ${stored} bytes for a ${big.length}-byte message`)
  const honest = await timed(async () => fetch(`${url}/runs?limit=50`, { headers: tenant('honest') }))
  t.equal(honest.status, 200)
  t.comment(`honest GET /runs after the attack: ${honest.ms} ms`)
})

t.test('row 10: in the open mode one client address naming many tenants is bounded; another address is not', async t => {
  const { harnessUrl: url } = await startTestGateway(t, { HARNESS_MAX_RUNS_IN_FLIGHT_PER_ADDRESS: '20' })
  const long = { message: 'm', mode: 'echo', options: { steps: 1000, delay_ms: 60_000 } }
  const statuses: number[] = []
  for (let i = 0; i < 30; i++) statuses.push(await postFrom('127.0.0.2', `${url}/runs:start`, long, tenant(`t${i % 11}`)))
  t.same([statuses.filter(s => s === 202).length, statuses.filter(s => s === 503).length], [20, 10], 'eleven tenants named by one address share its 20')
  const start = performance.now()
  const honest = await postFrom('127.0.0.3', `${url}/runs:start`, { message: 'm', mode: 'echo' }, tenant('t0'))
  t.equal(honest, 202, 'a client at another address, even naming a tenant the attacker used, starts its run')
  t.comment(`honest POST /runs:start from another address: ${Math.round(performance.now() - start)} ms`)
})
