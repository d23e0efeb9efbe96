import t from 'tap'
import '../helpers/no-keepalive.js'
import { startTestGateway } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { startIdp, IDP_AUDIENCE, IDP_ISSUER } from '../helpers/jwks.js'
import { join } from 'node:path'
import { open } from 'lmdb'
import { LIST_SCAN_BUDGET } from '../../src/runs/list.js'
import { spawnGateway } from '../helpers/child.js'

const tenant = (name: string): Record<string, string> => ({ 'x-svc-tenant-client-id': name })

async function start (url: string, body: object, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${url}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  if (res.status !== 202) throw new Error(`runs:start answered ${res.status}`)
  return ((await res.json()) as { run_id: string }).run_id
}

async function list (url: string, query = '', headers: Record<string, string> = {}): Promise<{ status: number, body: any }> {
  const res = await fetch(`${url}/runs${query}`, { headers })
  return { status: res.status, body: await res.json() }
}

/** Every page of a listing, following next_cursor. */
async function all (url: string, query: string, headers: Record<string, string> = {}): Promise<{ ids: string[], pages: number }> {
  const ids: string[] = []
  let pages = 0
  let cursor: string | null = null
  do {
    const sep = query === '' ? '?' : '&'
    const { status, body } = await list(url, `${query}${cursor === null ? '' : `${sep}cursor=${cursor}`}`.replace(/^&/, '?'), headers)
    if (status !== 200) throw new Error(`GET /runs answered ${status}: ${JSON.stringify(body)}`)
    ids.push(...body.runs.map((r: any) => r.run_id))
    cursor = body.next_cursor
    pages++
  } while (cursor !== null)
  return { ids, pages }
}

t.test('GET /runs: the tenant\'s runs, newest first, paged by cursor, never another tenant\'s', async t => {
  const { harnessUrl: url } = await startTestGateway(t)
  const mine: string[] = []
  for (let i = 0; i < 7; i++) {
    mine.push(await start(url, { message: `m${i}`, mode: 'echo' }, tenant('acme')))
    await start(url, { message: `other ${i}`, mode: 'echo' }, tenant('initech'))
  }
  const newest = [...mine].reverse()
  const first = await list(url, '?limit=3', tenant('acme'))
  t.equal(first.status, 200)
  t.same(first.body.runs.map((r: any) => r.run_id), newest.slice(0, 3))
  t.type(first.body.next_cursor, 'string')
  t.equal(first.body.runs[0].events, undefined, 'records without their events')
  t.match(first.body.runs[0], { tenant_id: 'acme', mode: 'echo', message: 'm6' })
  t.same((await all(url, '?limit=3', tenant('acme'))).ids, newest, 'three pages: every run once, in order')
  t.same((await all(url, '?limit=200', tenant('acme'))), { ids: newest, pages: 1 }, 'the last page says next_cursor: null')
  const theirs = await all(url, '', tenant('initech'))
  t.equal(theirs.ids.length, 7)
  t.notOk(theirs.ids.some(id => mine.includes(id)), 'another tenant sees none of them')
  t.same((await list(url, '', tenant('nobody'))).body, { runs: [], next_cursor: null })
  t.same((await all(url, '')).ids, [], 'no header (auth off): the default tenant, which has none')
})

t.test('GET /runs: status, mode and time filters', async t => {
  const { harnessUrl: url } = await startTestGateway(t)
  const h = tenant('acme')
  const done = await start(url, { message: 'quick', mode: 'echo' }, h)
  await eventually(() => list(url, '?status=succeeded', h), r => r.body.runs.length === 1)
  const between = new Date().toISOString()
  await eventually(async () => new Date().toISOString(), now => now > between)
  const slow = await start(url, { message: 'slow', mode: 'echo', options: { steps: 50, delay_ms: 200 } }, h)
  await eventually(() => list(url, '?status=running', h), r => r.body.runs.length === 1)
  const failed = await start(url, { message: 'no model', mode: 'agentic' }, h)
  await eventually(() => list(url, '?status=failed', h), r => r.body.runs.length === 1)

  const ids = async (q: string): Promise<string[]> => (await all(url, q, h)).ids
  t.same(await ids('?status=running'), [slow])
  t.same(await ids('?status=succeeded,failed'), [failed, done])
  t.same(await ids('?status=queued'), [])
  t.same(await ids('?mode=agentic'), [failed])
  t.same(await ids('?mode=echo&status=running'), [slow])
  t.same(await ids(`?since=${encodeURIComponent(between)}`), [failed, slow], 'since is inclusive of later runs')
  t.same(await ids(`?until=${encodeURIComponent(between)}`), [done], 'until: created before')
  t.same(await ids(`?since=2000-01-01T00:00:00Z&until=2000-01-02T00:00:00Z`), [])
  await fetch(`${url}/runs/${slow}/cancel`, { method: 'POST', headers: h })
  t.same(await ids('?status=cancelled'), [slow], 'the list reads the current status')
})

t.test('GET /runs: a bad query is a 400 naming what is wrong', async t => {
  const { harnessUrl: url } = await startTestGateway(t)
  const bad = [
    ['?limit=0', 'limit must be an integer from 1 to 200'],
    ['?limit=201', 'limit must be an integer from 1 to 200'],
    ['?limit=1.5', 'limit must be an integer from 1 to 200'],
    ['?limit=abc', 'limit must be an integer from 1 to 200'],
    ['?limit=', 'limit must be an integer from 1 to 200'],
    ['?status=done', 'status must be a comma-separated list of queued, running, succeeded, failed, cancelled'],
    ['?status=', 'status must be a comma-separated list of queued, running, succeeded, failed, cancelled'],
    ['?status=running&status=queued', 'status is given more than once'],
    ['?mode=canned', 'mode names an unknown mode'],
    ['?since=yesterday', 'since must be an RFC 3339 date-time'],
    ['?until=1700000000000', 'until must be an RFC 3339 date-time'],
    ['?cursor=x', 'cursor is not a next_cursor of this list'],
    [`?cursor=${Buffer.from('../../etc').toString('base64url')}`, 'cursor is not a next_cursor of this list'],
    [`?cursor=${'A'.repeat(300)}`, 'cursor is not a next_cursor of this list']
  ]
  for (const [query, detail] of bad) t.same(await list(url, query), { status: 400, body: { detail } }, query)
})

t.test('GET /runs: a filter matching few of many runs pages through them in bounded steps', async t => {
  const { harnessUrl: url } = await startTestGateway(t)
  const h = tenant('acme')
  const wanted = await start(url, { message: 'the one', mode: 'agentic' }, h)
  const many = LIST_SCAN_BUDGET + 20
  for (let i = 0; i < many; i += 100) await Promise.all(Array.from({ length: Math.min(100, many - i) }, () => start(url, { message: 'x', mode: 'echo' }, h)))
  const first = await list(url, '?mode=agentic', h)
  t.same(first.body.runs, [], 'the first page looked at its budget of runs and found none')
  t.type(first.body.next_cursor, 'string', 'with a cursor to go on from')
  t.same(await all(url, '?mode=agentic', h), { ids: [wanted], pages: 2 })
})

t.test('GET /runs with harness auth on: the token and the tenant header are required, as on GET /runs/{id}', async t => {
  const idp = await startIdp(t)
  const { harnessUrl: url } = await startTestGateway(t, { SVC_HARNESS_AUTH_ENABLED: 'true', IDP_ISSUER, IDP_JWKS_URL: idp.jwksUrl, IDP_RS256_AUDIENCE: IDP_AUDIENCE })
  await eventually(() => fetch(`${url}/health/ready`).then(r => r.status), s => s === 200)
  t.same(await list(url), { status: 401, body: { detail: 'missing Bearer token' } })
  const auth = { authorization: `Bearer ${await idp.sign()}` }
  t.same(await list(url, '', auth), { status: 401, body: { detail: 'auth_failed:tenant_unresolved' } })
  t.same(await list(url, '?limit=0', { ...auth }), { status: 401, body: { detail: 'auth_failed:tenant_unresolved' } }, 'the token is checked before the query')
  t.same(await list(url, '', { ...auth, ...tenant('acme') }), { status: 200, body: { runs: [], next_cursor: null } })
})

t.test('runs stored before the index existed are listed after a restart', async t => {
  const dir = t.testdir()
  const first = spawnGateway(t, ['start'], { DATA_DIR: dir })
  const url = `http://127.0.0.1:${(await first.waitFor('gateway listening'))['harnessPort']}`
  const id = await start(url, { message: 'old', mode: 'echo' }, tenant('acme'))
  await eventually(() => list(url, '', tenant('acme')), r => r.body.runs[0]?.status === 'succeeded')
  first.proc.kill('SIGTERM')
  await first.exit
  // As an earlier version left it: the runs, and none of their indexes.
  const env = open({ path: join(dir, 'state.lmdb'), maxDbs: 32 })
  for (const name of ['runs-by-tenant-v1', 'runs-by-end-v1', 'run-store-meta']) await env.openDB({ name }).drop()
  await env.close()
  const second = spawnGateway(t, ['start'], { DATA_DIR: dir })
  const again = `http://127.0.0.1:${(await second.waitFor('gateway listening'))['harnessPort']}`
  t.match(await second.waitFor('runs stored before the retention and tenant indexes were indexed'), { built: 1 }, 'indexed once the gateway listens')
  t.same((await list(again, '', tenant('acme'))).body.runs.map((r: any) => r.run_id), [id])
})
