import t from 'tap'
import fc from 'fast-check'
import { eventually } from '../helpers/http.js'
import { hostileString } from './support/json.js'
import { describe, judge, params, seedLine, Tally, type RouteRule } from './support/property.js'
import { headerValue } from './support/requests.js'
import { ORGS, startTarget, TOPICS, type Target } from './support/target.js'
import { send, type Header, type RawRequest } from './support/wire.js'

/**
 * Every route of both ports, and paths that are none, with generated
 * methods, targets, headers and small bodies: each answer is one of the
 * route's successes or a 4xx in its dialect; no 5xx, hang or crash; and a
 * run exists only for a run request that was answered with a success.
 */
const tally = new Tally('every route and path of both ports')
console.log(`# ${seedLine('test/attack/routes.test.ts')}`)
t.teardown(() => tally.record())

/**
 * A target and how it answers. A method the path's route does not take is
 * the server's own 405 (or 404), in the server's dialect (`plain` on the
 * main port, `harness` on the harness port), as are framing refusals there.
 */
interface Place { port: 'main' | 'harness', path: string, rule: RouteRule, methods: readonly string[], creates?: boolean }

const plain = (ok: number[] = [200]): RouteRule => ({ dialect: 'plain', ok })
const harness = (ok: number[] = [200]): RouteRule => ({ dialect: 'harness', ok })

/** A path segment an attacker puts where an id goes. */
const segment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('run-1', '..', '.', '%2e%2e', '%2f', '%2F..%2F', '%00', '%ff', 'a%20b', '~', 'x'.repeat(129), 'x'.repeat(600), 'run-1;x', 'run-1?x', ''),
  hostileString.map(s => encodeURIComponent(s.isWellFormed() ? s : s.toWellFormed()).slice(0, 2000))
)

const FRONTED = ['/runs', '/runs:start', '/runs/{id}', '/runs/{id}/stream', '/runs/{id}/cancel', '/health', '/health/ready', '/skills']
const ESCAPES = ['//127.0.0.1:1/x', '/\\127.0.0.1/x', '/%2f%2f127.0.0.1', '/%5c', '/runs/../health', '/RUNS', '/runs/', '', '/%72uns', '/runs%2fx']

const place: fc.Arbitrary<Place> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom<Place>(
    { port: 'main', path: '/health', rule: plain(), methods: ['GET'] },
    { port: 'main', path: '/health/ready', rule: plain(), methods: ['GET'] },
    { port: 'main', path: '/metrics', rule: plain(), methods: ['GET'] },
    { port: 'main', path: '/openapi.json', rule: plain(), methods: ['GET'] },
    { port: 'main', path: '/.well-known/jwks.json', rule: plain(), methods: ['GET'] },
    { port: 'main', path: '/api/v1/login', rule: { dialect: 'oauth', ok: [200] }, methods: ['POST'] },
    { port: 'main', path: '/v1/asset/track', rule: { dialect: 'telemetry', ok: [200], bearerChallenge: true }, methods: ['POST'] },
    { port: 'main', path: '/v1/stream/events', rule: { dialect: 'evidence', ok: [202], bearerChallenge: true }, methods: ['POST'] },
    { port: 'harness', path: '/health', rule: harness(), methods: ['GET'] },
    { port: 'harness', path: '/health/ready', rule: harness(), methods: ['GET'] },
    { port: 'harness', path: '/runs', rule: harness([200, 202]), methods: ['POST', 'GET'], creates: true },
    { port: 'harness', path: '/runs:start', rule: harness([202]), methods: ['POST'], creates: true }
  ) },
  segment.map(id => ({ port: 'harness' as const, path: `/runs/${id}`, rule: harness(), methods: ['GET'] })),
  segment.map(id => ({ port: 'harness' as const, path: `/runs/${id}/stream`, rule: harness(), methods: ['GET'] })),
  segment.map(id => ({ port: 'harness' as const, path: `/runs/${id}/cancel`, rule: harness(), methods: ['POST'] })),
  { weight: 3, arbitrary: fc.tuple(fc.constantFrom('acme', 'acme', 'initech', 'nope', '..', '%2e%2e', 'ACME'), fc.oneof(fc.constantFrom(...FRONTED), fc.constantFrom(...ESCAPES)), fc.oneof(fc.constant('run-1'), segment))
    .map(([slug, rest, id]) => ({ port: 'main' as const, path: `/api/v1/orgs/${slug}/harness${rest.replace('{id}', id)}`, rule: harness([200, 202]), methods: ['GET', 'POST'], creates: rest === '/runs' || rest === '/runs:start' })) },
  segment.map(s => ({ port: 'main' as const, path: `/${s}`, rule: plain(), methods: [] })),
  segment.map(s => ({ port: 'harness' as const, path: `/${s}`, rule: harness(), methods: [] }))
)

/** Headers that must come once; each may be doubled. */
const SINGLE = ['Content-Type', 'X-Request-Id', 'Authorization', 'X-Svc-Tenant-Client-Id', 'Last-Event-ID', 'Host']

type Credential = 'none' | 'device' | 'user' | 'user-no-assertion' | 'garbage' | 'basic' | 'huge'

const request = fc.record({
  place,
  method: fc.oneof({ weight: 8, arbitrary: fc.constantFrom('GET', 'POST') }, { weight: 1, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD') }),
  query: fc.constantFrom('', '', '', '?x=1', '?%00', '?a=%ZZ', `?${'q'.repeat(3000)}`, '?status=running&limit=-1'),
  credential: fc.constantFrom<Credential>('none', 'device', 'user', 'user', 'user', 'user-no-assertion', 'garbage', 'basic', 'huge'),
  body: fc.constantFrom<string | undefined>(undefined, '{"message":"hi","mode":"echo"}', '{"message":"hi","mode":"echo"}', '{"message":1}', '{', 'null', '{"message":"x","mode":"echo","options":{"steps":3}}', '{"message":"x","mode":"nope"}'),
  doubled: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.subarray(SINGLE, { minLength: 1, maxLength: 2 }) }),
  values: fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.tuple(fc.constantFrom('Content-Type', 'X-Request-Id', 'X-Svc-Tenant-Client-Id', 'Last-Event-ID', 'Accept', 'X-Svc-Tenant-Assertion', 'Origin'), headerValue), { maxLength: 4 }) }),
  oversized: fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 3500, max: 6000 }) })
})

function credential (target: Target, c: Credential, tenant: string): Header[] {
  switch (c) {
    case 'none': return []
    case 'device': return [['Authorization', `Bearer ${target.device}`]]
    case 'user': return target.harnessHeaders(target.user, tenant)
    case 'user-no-assertion': return [['Authorization', `Bearer ${target.user}`], ['X-Svc-Tenant-Client-Id', tenant]]
    case 'garbage': return [['Authorization', 'Bearer not.a.jwt']]
    case 'basic': return [['Authorization', 'Basic dXNlcjpwYXNz']]
    case 'huge': return [['Authorization', `Bearer ${'a'.repeat(3000)}`]]
  }
}

t.test('every route and path, generated methods and headers: a success of the route or a 4xx in its dialect; runs only for successes', async t => {
  const target = await startTarget(t)
  let created = 0
  await fc.assert(fc.asyncProperty(request, async r => {
    let headers: Header[] = [...credential(target, r.credential, ORGS.acme.tenant)]
    if (r.body !== undefined) headers.push(['Content-Type', 'application/json'])
    for (const [name, value] of r.values) if (value !== undefined) headers.push([name, value])
    for (const name of r.doubled) {
      const existing = headers.find(([n]) => n === name)
      headers.push([name, existing?.[1] ?? 'again'])
      if (name === 'Host') headers = [['Host', '127.0.0.1'], ...headers]
    }
    if (r.oversized !== undefined) headers.push(['X-Padding', 'p'.repeat(r.oversized)])
    const req: RawRequest = { method: r.method, target: `${r.place.path}${r.query}`, headers, ...(r.body !== undefined ? { body: r.body } : {}) }
    const outcome = await send(r.place.port === 'main' ? target.port : target.harnessPort, req)
    tally.count(outcome)
    const problem = r.method === 'HEAD'
      ? (outcome.kind === 'answer' && outcome.status < 500 ? undefined : `HEAD: ${outcome.kind === 'answer' ? outcome.status : outcome.kind}`)
      : judge(r.place.methods.includes(r.method) ? r.place.rule : { dialect: r.place.port === 'main' ? 'plain' : 'harness', ok: [] }, outcome)
    if (problem !== undefined) throw new Error(`${problem}\n  request: ${describe(req)}`)
    if (outcome.kind === 'answer' && outcome.status < 300 && r.place.creates === true && r.method === 'POST') created++
  }), params(300))

  t.equal(await tally.survived(target), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
  const stray = { objects: target.objects(), telemetry: await target.published(TOPICS.telemetry), evidence: await target.published(TOPICS.evidence) }
  tally.storedAfterRefusal += stray.objects.length + stray.telemetry.length + stray.evidence.length
  t.same(stray.objects, [], 'nothing stored')
  t.same(stray.telemetry, [], 'no telemetry published')
  t.same(stray.evidence, [], 'no evidence published')
  const runIds = async (): Promise<Set<string>> => new Set((await target.published(TOPICS.runs)).map(m => m.key))
  const runs = await eventually(runIds, ids => ids.size >= created)
  tally.storedAfterRefusal += Math.max(0, runs.size - created)
  t.equal(runs.size, created, 'runs on the bus: one for each run request answered with a success, none for a refused one')
})
