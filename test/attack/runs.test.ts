import t from 'tap'
import { request } from 'node:http'
import { performance } from 'node:perf_hooks'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { readSse } from '../helpers/sse.js'
import { eventually } from '../helpers/settle.js'

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

t.test('row 3: one tenant reading large records as fast as it can is held to its byte rate (429 too_many_reads); another tenant reads', async t => {
  const rate = 1024 * 1024
  const { harnessUrl: url } = await startTestGateway(t, { HARNESS_TENANT_READ_BYTES_PER_S: String(rate) })
  const sync = await fetch(`${url}/runs`, { method: 'POST', headers: { ...JSON_HEADERS, ...tenant('mallory') }, body: JSON.stringify({ message: 'x'.repeat(256), mode: 'echo', options: { steps: 1000 } }) })
  const record = await sync.text()
  const id = (JSON.parse(record) as { run_id: string }).run_id
  const statuses: number[] = []
  let refused: Response | undefined
  while (refused === undefined && statuses.length < 100) {
    const res = await fetch(`${url}/runs/${id}`, { headers: tenant('mallory') })
    statuses.push(res.status)
    if (res.status === 429) refused = res
    else await res.arrayBuffer()
  }
  t.ok(refused, `refused after ${statuses.length - 1} reads of ${record.length} bytes (the sync answer counted too)`)
  t.ok(statuses.length - 1 <= Math.ceil(2 * rate / record.length) + 1, 'no more than the 2 s burst and one answer past it')
  t.match(refused!.headers.get('retry-after'), /^[1-9]\d*$/)
  t.same(await refused!.json(), { detail: 'too_many_reads' })
  t.equal((await fetch(`${url}/runs?limit=10`, { headers: tenant('mallory') })).status, 429, 'a page of the list counts the same')
  const honest = await timed(async () => fetch(`${url}/runs?limit=50`, { headers: tenant('honest') }))
  t.equal(honest.status, 200, 'another tenant reads')
  const cancel = await fetch(`${url}/runs/${id}/cancel`, { method: 'POST', headers: tenant('mallory') })
  t.equal(cancel.status, 409, 'a cancel is never refused for the rate (this run has ended)')
  const again = await eventually(async () => fetch(`${url}/runs/${id}`, { headers: tenant('mallory') }), r => r.status === 200, 10_000, 250)
  t.equal((await again.text()).length, record.length, 'once its rate allows, the tenant reads again')
  t.comment(`reads of a ${record.length}-byte record at ${rate} bytes/s: ${statuses.length - 1} served before 429; honest GET /runs of another tenant ${honest.ms} ms`)
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

/** Starts `count` echo runs of 1,000 steps with the longest message a step carries, all at once, as `name`. */
async function startMany (url: string, name: string, count: number): Promise<string[]> {
  const run = { message: 'x'.repeat(256), mode: 'echo', options: { steps: 1000 } }
  return Promise.all(Array.from({ length: count }, async () => {
    const res = await fetch(`${url}/runs:start`, { method: 'POST', headers: { ...JSON_HEADERS, ...tenant(name) }, body: JSON.stringify(run) })
    return ((await res.json()) as { run_id: string }).run_id
  }))
}

/** The runs' records once every one has ended, with the bytes of the events each stored. */
async function ended (url: string, name: string, ids: string[]): Promise<Array<{ status: string, error: { code: string } | null, bytes: number }>> {
  return Promise.all(ids.map(async id => {
    const record = await eventually(async () => await (await fetch(`${url}/runs/${id}`, { headers: tenant(name) })).json() as { status: string, error: { code: string } | null, events: unknown[] },
      r => ['succeeded', 'failed', 'cancelled'].includes(r.status), 120_000, 200)
    return { status: record.status, error: record.error, bytes: record.events.reduce<number>((n, e) => n + JSON.stringify(e).length, 0) }
  }))
}

const honestStart = (url: string): Promise<{ status: number, ms: number }> =>
  timed(async () => fetch(`${url}/runs:start`, { method: 'POST', headers: { ...JSON_HEADERS, ...tenant('honest') }, body: JSON.stringify({ message: 'm', mode: 'echo' }) }))

t.test('row 4: a tenant\'s runs stop at its stored bytes: runs in flight fail with run_storage_limit, new starts are 429; another tenant starts', async t => {
  const quota = 2 * 1024 * 1024
  const { harnessUrl: url } = await startTestGateway(t, { HARNESS_TENANT_STORED_BYTES: String(quota) })
  const runs = await ended(url, 'mallory', await startMany(url, 'mallory', 12))
  const stored = runs.reduce((n, r) => n + r.bytes, 0)
  t.ok(runs.some(r => r.error?.code === 'run_storage_limit'), `runs failed with run_storage_limit: ${runs.filter(r => r.error?.code === 'run_storage_limit').length} of 12`)
  t.ok(stored <= quota + 12 * 2048, `12 runs that would store ${(12 * 0.45).toFixed(1)} MB stored ${stored} bytes: the quota, and per run at most a step and its end`)
  const refused = await fetch(`${url}/runs:start`, { method: 'POST', headers: { ...JSON_HEADERS, ...tenant('mallory') }, body: JSON.stringify({ message: 'm', mode: 'echo' }) })
  t.equal(refused.status, 429)
  t.equal(refused.headers.get('retry-after'), '60')
  t.same(await refused.json(), { detail: 'run_storage_limit' })
  const honest = await honestStart(url)
  t.equal(honest.status, 202, 'another tenant starts')
  t.comment(`stored-bytes quota ${quota}: the tenant's 12 runs stored ${stored} bytes; honest POST /runs:start ${honest.ms} ms`)
})

t.test('row 4: a tenant\'s runs writing faster than its rate are paced, and its starts meanwhile are 429 with the wait; another tenant starts', async t => {
  const rate = 16 * 1024
  const { harnessUrl: url } = await startTestGateway(t, { HARNESS_TENANT_WRITE_BYTES_PER_S: String(rate) })
  const ids = await startMany(url, 'mallory', 4)
  const start = async (): Promise<Response> => {
    const res = await fetch(`${url}/runs:start`, { method: 'POST', headers: { ...JSON_HEADERS, ...tenant('mallory') }, body: JSON.stringify({ message: 'm', mode: 'echo' }) })
    if (res.status !== 429) ids.push(((await res.json()) as { run_id: string }).run_id)
    return res
  }
  const refused = await eventually(start, res => res.status === 429, 10_000, 250).catch(() => undefined)
  t.ok(refused, 'once its burst (8 s of its rate) is written, a start of the tenant is refused')
  const wait = Number(refused?.headers.get('retry-after'))
  t.ok(wait >= 1, `Retry-After ${wait} s: the time the tenant's deficit takes to refill`)
  t.same(await refused?.json(), { detail: 'run_storage_limit' })
  const honest = await honestStart(url)
  t.equal(honest.status, 202, 'another tenant starts')
  const paced = await (await fetch(`${url}/runs/${ids[0]}`, { headers: tenant('mallory') })).json() as { status: string, events: unknown[] }
  t.equal(paced.status, 'running', 'the runs go on, slowed to the rate, not failed')
  t.ok(paced.events.length < 1000, `${paced.events.length} of its events written so far`)
  for (const id of ids) await fetch(`${url}/runs/${id}/cancel`, { method: 'POST', headers: { ...JSON_HEADERS, ...tenant('mallory') }, body: '{}' })
  t.comment(`write rate ${rate} B/s, burst ${8 * rate}: refused with Retry-After ${wait} s; honest POST /runs:start ${honest.ms} ms`)
})
