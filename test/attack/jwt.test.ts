import t from 'tap'
import fc from 'fast-check'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { eventually } from '../helpers/http.js'
import { startRecorder } from '../helpers/recorder.js'
import { render } from './support/json.js'
import { describe, judge, params, seedLine, Tally, type RouteRule } from './support/property.js'
import { attacks, harnessClaims, signRaw, type Attack } from './support/tokens.js'
import { DEVICE, INGEST_AUDIENCE, ORGS, OTHER_DEVICE, READER, startTarget, TOPICS, type Target } from './support/target.js'
import type { Answer, Header, Outcome, RawRequest } from './support/wire.js'

/**
 * Forged, stale, misdirected and foreign tokens on every authenticated
 * route (ingest, the harness, the front door): each gets the spec's 401
 * detail, or 403, in the route's dialect; nothing is stored, published,
 * cancelled or fetched from a URL a token names.
 */
const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))
const tally = new Tally('JWT attacks, every authenticated route')
console.log(`# ${seedLine('test/attack/jwt.test.ts')}`)
t.teardown(() => tally.record())

interface AuthRoute {
  name: string
  kind: 'ingest' | 'harness' | 'frontdoor'
  rule: RouteRule
  request(token: string): RawRequest
  port(target: Target): number
}

const evidenceBody = (eventId: string): string =>
  `--b\r\nContent-Disposition: form-data; name="envelope"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify({ schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: eventId, occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' } })}\r\n--b--\r\n`
const RUN_BODY = '{"message":"hi","mode":"echo"}'

function routes (target: Target, runId: string): AuthRoute[] {
  const ingest = (name: string, path: string, rule: RouteRule, headers: Header[], body: () => string): AuthRoute =>
    ({ name, kind: 'ingest', rule, port: t => t.port, request: token => ({ method: 'POST', target: path, headers: [['Authorization', `Bearer ${token}`], ...headers], body: body() }) })
  const direct = (method: string, path: string, ok: number[], body?: string): AuthRoute =>
    ({ name: `harness ${method} ${path}`, kind: 'harness', rule: { dialect: 'harness', ok }, port: t => t.harnessPort, request: token => ({ method, target: path.replace('{id}', runId), headers: [...target.harnessHeaders(token), ...(body ? [['Content-Type', 'application/json'] as Header] : [])], ...(body ? { body } : {}) }) })
  const door = (method: string, path: string, ok: number[], body?: string): AuthRoute =>
    ({ name: `front door ${method} ${path}`, kind: 'frontdoor', rule: { dialect: 'harness', ok }, port: t => t.port, request: token => ({ method, target: `/api/v1/orgs/acme/harness${path.replace('{id}', runId)}`, headers: [['Authorization', `Bearer ${token}`], ...(body ? [['Content-Type', 'application/json'] as Header] : [])], ...(body ? { body } : {}) }) })
  return [
    ingest('asset track', '/v1/asset/track', { dialect: 'telemetry', ok: [200], bearerChallenge: true }, [['Content-Type', 'application/json'], ['X-Request-Id', `jwt-${randomUUID()}`], ['X-Request-Timestamp', '1']], () => render(example)),
    ingest('stream events', '/v1/stream/events', { dialect: 'evidence', ok: [202], bearerChallenge: true }, [['Content-Type', 'multipart/form-data; boundary=b']], () => evidenceBody(`evt-${randomUUID()}`)),
    direct('POST', '/runs', [200, 202], RUN_BODY),
    direct('POST', '/runs:start', [202], RUN_BODY),
    direct('GET', '/runs/{id}', [200]),
    direct('GET', '/runs/{id}/stream', [200]),
    direct('POST', '/runs/{id}/cancel', [200]),
    door('POST', '/runs', [200, 202], RUN_BODY),
    door('POST', '/runs:start', [202], RUN_BODY),
    door('GET', '/runs/{id}', [200]),
    door('GET', '/runs/{id}/stream', [200]),
    door('POST', '/runs/{id}/cancel', [200])
  ]
}

/** The 401 detail of an answer, wherever its dialect puts it. */
function detail (answer: Answer): unknown {
  const body = answer.json as any
  return body?.detail ?? body?.details?.request ?? body?.message
}

t.test('JWT attacks on every authenticated route: the spec\'s 401 detail or 403, in the route\'s dialect; nothing stored, published, cancelled or fetched', async t => {
  const target = await startTarget(t)
  const attackerHost = await startRecorder(t)
  const start = await target.send(target.harnessPort, { method: 'POST', target: '/runs:start', headers: [...target.harnessHeaders(target.user), ['Content-Type', 'application/json']], body: '{"message":"hold","mode":"echo","options":{"delay_ms":60000}}' })
  const runId = (start as Answer).json as { run_id: string }
  const all = routes(target, runId.run_id)
  const ingestAttacks = await attacks(target, { sub: DEVICE.client_id, client_id: DEVICE.client_id, tenant: DEVICE.tenant, aud: INGEST_AUDIENCE, scope: DEVICE.scopes.join(' ') }, `${attackerHost.url}/jwks.json`)
  const harnessAttacks = await attacks(target, harnessClaims('web-user'), `${attackerHost.url}/jwks.json`)
  const wrongKind: Attack[] = [
    { name: 'a valid token without the route\'s scope', token: await target.mint({ sub: READER.client_id, client_id: READER.client_id, scope: 'profile:read' }), expect: { status: 403 } },
    { name: 'a client_id that is a path', token: await target.mint({ sub: '../../tmp/x', client_id: '../../tmp/x', scope: DEVICE.scopes.join(' ') }), expect: { status: 403 } },
    { name: 'a harness token on ingest', token: target.user, expect: { status: 401, detail: 'auth_failed:wrong_audience' } }
  ]

  for (const route of all) {
    const legit = route.kind === 'ingest' ? target.device : target.user
    if (route.name.endsWith('cancel')) continue
    const control = await target.send(route.port(target), route.request(legit))
    t.equal(judge(route.rule, control), undefined, `control: ${route.name} accepts the legitimate token`)
    t.ok(control.kind === 'answer' && control.status < 300, `control: ${route.name} answers ${control.kind === 'answer' ? control.status : control.kind}`)
  }
  const controls = { telemetry: 1, evidence: 1 }

  for (const route of all) {
    const list = route.kind === 'ingest' ? [...ingestAttacks, ...wrongKind] : harnessAttacks
    // One route's attacks at once: the answers do not depend on each other, and the suite has a time budget.
    await Promise.all(list.map(async attack => {
      const req = route.request(attack.token)
      const outcome = await target.send(route.port(target), req)
      tally.count(outcome)
      const problem = judge({ ...route.rule, ok: [] }, outcome)
      const expected = route.kind === 'frontdoor' && attack.frontDoor ? attack.frontDoor : attack.expect
      const got = outcome.kind === 'answer' ? { status: outcome.status, detail: detail(outcome) } : { status: 0, detail: outcome.kind }
      t.same([problem, expected.status === 401 ? got : { status: got.status }], [undefined, expected], `${route.name}: ${attack.name}`)
    }))
  }

  // Foreign but authentic: another tenant's caller.
  const initech = await target.mint(harnessClaims('initech-user'))
  const foreign = async (port: number, req: RawRequest): Promise<Outcome> => {
    const outcome = await target.send(port, req)
    tally.count(outcome)
    return outcome
  }
  for (const path of ['/runs/{id}', '/runs/{id}/stream']) {
    const res = await foreign(target.harnessPort, { method: 'GET', target: path.replace('{id}', runId.run_id), headers: target.harnessHeaders(initech, ORGS.initech.tenant) })
    t.same(res.kind === 'answer' ? [res.status, detail(res)] : res.kind, [403, 'cross_tenant_replay:run'], `another tenant: harness GET ${path}`)
  }
  const cancel = await foreign(target.harnessPort, { method: 'POST', target: `/runs/${runId.run_id}/cancel`, headers: target.harnessHeaders(initech, ORGS.initech.tenant) })
  t.same(cancel.kind === 'answer' ? [cancel.status, detail(cancel)] : cancel.kind, [403, 'cross_tenant_replay:run'], 'another tenant cannot cancel')
  const notMember = await foreign(target.port, { method: 'GET', target: `/api/v1/orgs/acme/harness/runs/${runId.run_id}`, headers: [['Authorization', `Bearer ${initech}`]] })
  t.same(notMember.kind === 'answer' ? [notMember.status, detail(notMember)] : notMember.kind, [403, 'not_a_member:org'], 'another org\'s member at the front door')
  const forged = await foreign(target.harnessPort, { method: 'GET', target: `/runs/${runId.run_id}`, headers: [['Authorization', `Bearer ${initech}`], ['X-Svc-Tenant-Client-Id', ORGS.acme.tenant], ['X-Svc-Tenant-Assertion', 'v1.9999999999.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']] })
  t.same(forged.kind === 'answer' ? [forged.status, detail(forged)] : forged.kind, [401, 'auth_failed:tenant_unresolved'], 'a tenant header with a forged assertion')

  // The other device reuses the control's event_id: its own namespace, stored and published as its own.
  const shared = `evt-${randomUUID()}`
  const other = await target.mint({ sub: OTHER_DEVICE.client_id, client_id: OTHER_DEVICE.client_id, scope: OTHER_DEVICE.scopes.join(' ') })
  for (const token of [target.device, other]) {
    const res = await target.send(target.port, { method: 'POST', target: '/v1/stream/events', headers: [['Authorization', `Bearer ${token}`], ['Content-Type', 'multipart/form-data; boundary=b']], body: evidenceBody(shared) })
    t.same(res.kind === 'answer' ? [res.status, res.headers['idempotent-replay']] : res.kind, [202, undefined], 'the same event_id from two tenants: both stored, neither a replay')
  }
  controls.evidence += 2

  t.equal(await tally.survived(target), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
  t.same(attackerHost.requests, [], 'no key set or certificate was fetched from a URL a token named')
  const run = await target.send(target.harnessPort, { method: 'GET', target: `/runs/${runId.run_id}`, headers: target.harnessHeaders(target.user) })
  t.match((run as Answer).json, { status: /^(queued|running)$/ }, 'the run no attacker could cancel is still in flight')
  await target.send(target.harnessPort, { method: 'POST', target: `/runs/${runId.run_id}/cancel`, headers: target.harnessHeaders(target.user) })
  await target.settled()
  const telemetry = await target.published(TOPICS.telemetry)
  t.equal(telemetry.length, controls.telemetry, 'telemetry: only the control')
  const evidence = await target.published(TOPICS.evidence)
  t.equal(evidence.length, controls.evidence, 'evidence: only the controls')
  t.same(evidence.filter(m => m.value.event_id === shared).map(m => m.headers['message-id']).sort(), [`${DEVICE.client_id}/${shared}`, `${OTHER_DEVICE.client_id}/${shared}`], 'each under its own tenant')
  const objects = target.objects()
  t.same(objects, [], 'nothing stored (the controls carry no media)')
  const runs = await eventually(async () => new Set((await target.published(TOPICS.runs)).map(m => m.key)), ids => ids.size >= 5)
  t.equal(runs.size, 5, 'runs: the held run and the four controls, none from an attack')
  tally.storedAfterRefusal += Math.max(0, telemetry.length - controls.telemetry) + Math.max(0, evidence.length - controls.evidence) + objects.length + Math.max(0, runs.size - 5)
})

/** Header and claim sets nobody issues: whatever they hold, a 401 or 403, never a success or a 5xx. */
const junk = fc.record({
  header: fc.dictionary(fc.constantFrom('alg', 'kid', 'typ', 'jku', 'x5u', 'x5c', 'crit', 'b64', 'zip', 'cty', 'enc'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  claims: fc.dictionary(fc.constantFrom('iss', 'aud', 'exp', 'nbf', 'iat', 'sub', 'client_id', 'tenant', 'scope', 'jti'), fc.jsonValue({ maxDepth: 2 }), { minKeys: 1, maxKeys: 6 }),
  alg: fc.constantFrom('RS256', 'none', 'HS256', 'RS512', 'ES256', 'PS256'),
  where: fc.constantFrom('ingest', 'harness', 'frontdoor')
})

t.test('junk JWT headers and claims over our own signature: refused, never a success or a 5xx', async t => {
  const target = await startTarget(t)
  await fc.assert(fc.asyncProperty(junk, async j => {
    const token = signRaw({ ...j.header, alg: j.alg, kid: target.key.kid }, { ...j.claims, exp: 'exp' in j.claims ? j.claims['exp'] : 1 }, target.key.privateKey)
    const req: RawRequest = j.where === 'ingest'
      ? { method: 'POST', target: '/v1/asset/track', headers: [['Authorization', `Bearer ${token}`], ['Content-Type', 'application/json'], ['X-Request-Id', 'junk'], ['X-Request-Timestamp', '1']], body: render(example) }
      : j.where === 'harness'
        ? { method: 'POST', target: '/runs:start', headers: [...target.harnessHeaders(token), ['Content-Type', 'application/json']], body: RUN_BODY }
        : { method: 'POST', target: '/api/v1/orgs/acme/harness/runs:start', headers: [['Authorization', `Bearer ${token}`], ['Content-Type', 'application/json']], body: RUN_BODY }
    const outcome = await target.send(j.where === 'harness' ? target.harnessPort : target.port, req)
    tally.count(outcome)
    const rule: RouteRule = j.where === 'ingest' ? { dialect: 'telemetry', ok: [], bearerChallenge: true } : { dialect: 'harness', ok: [] }
    const problem = judge(rule, outcome)
    if (problem !== undefined) throw new Error(`${problem}\n  request: ${describe(req)}`)
  }), params(60))
  t.equal(await tally.survived(target), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
  const stray = { telemetry: await target.published(TOPICS.telemetry), runs: await target.published(TOPICS.runs) }
  tally.storedAfterRefusal += stray.telemetry.length + stray.runs.length
  t.same(stray.telemetry, [], 'nothing published')
  t.same(stray.runs, [], 'no run started')
})
