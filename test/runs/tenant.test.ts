import t from 'tap'
import '../helpers/no-keepalive.js'
import { signTenantAssertion } from '../../src/auth/index.js'
import { startTestGateway } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { startIdp, harnessAuthEnv, type TestIdp } from '../helpers/jwks.js'
import { rawRequest } from '../helpers/raw-request.js'

const SECRET = 'assertion-secret-for-tests-0123456789abcdef'
const UNRESOLVED = { detail: 'auth_failed:tenant_unresolved' }

interface Mode { name: string, auth: boolean, secret: boolean }
const MODES: Mode[] = [
  { name: 'auth off', auth: false, secret: false },
  { name: 'auth on (the spec)', auth: true, secret: false },
  { name: 'auth on, assertion secret set', auth: true, secret: true },
  { name: 'auth off, assertion secret set', auth: false, secret: true }
]

/** A harness alone, with the test IdP's keys when auth is on, and the assertion secret when asked. */
async function harness (t: any, mode: Pick<Mode, 'auth' | 'secret'>, idp?: TestIdp) {
  idp ??= await startIdp(t)
  const gw = await startTestGateway(t, { ROLES: 'harness', ...(mode.auth ? harnessAuthEnv(idp) : {}), ...(mode.secret ? { HARNESS_TENANT_ASSERTION_SECRET: SECRET } : {}) })
  await eventually(() => fetch(`${gw.harnessUrl}/health/ready`).then(r => r.status), s => s === 200)
  const port = gw.gateway.harnessPort!
  return { idp, port, url: gw.harnessUrl }
}

const asserted = (tenant: string, token: string, now = Date.now()): Record<string, string> =>
  ({ 'x-svc-tenant-client-id': tenant, 'x-svc-tenant-assertion': signTenantAssertion(SECRET, tenant, token, now) })

t.test('spec mode (no secret): a valid token of user A with tenant B\'s header reads B\'s runs, as the spec says', async t => {
  const { idp, url } = await harness(t, { auth: true, secret: false })
  const userB = await idp.sign({ sub: 'user-b' })
  const run = await (await fetch(`${url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${userB}`, 'x-svc-tenant-client-id': 'tenant-b' }, body: '{"message":"b only","mode":"echo"}' })).json() as any
  const userA = await idp.sign({ sub: 'user-a' })
  const read = await fetch(`${url}/runs/${run.run_id}`, { headers: { authorization: `Bearer ${userA}`, 'x-svc-tenant-client-id': 'tenant-b' } })
  t.match([read.status, await read.json()], [200, { run_id: run.run_id, tenant_id: 'tenant-b' }], 'the header is trusted: this is what HARNESS_TENANT_ASSERTION_SECRET closes')
})

t.test('with the secret: a tenant header counts only with a valid assertion for this caller', async t => {
  const { idp, url } = await harness(t, { auth: true, secret: true })
  const userA = await idp.sign({ sub: 'user-a' })
  const userB = await idp.sign({ sub: 'user-b' })
  const run = await (await fetch(`${url}/runs`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${userB}`, ...asserted('tenant-b', userB) }, body: '{"message":"b only","mode":"echo"}' })).json() as any
  t.equal(run.tenant_id, 'tenant-b', 'the front door\'s way in works')
  const read = (headers: Record<string, string>) => fetch(`${url}/runs/${run.run_id}`, { headers: { authorization: `Bearer ${userA}`, ...headers } })
    .then(async r => [r.status, await r.json()])
  const forged = asserted('tenant-b', userA)['x-svc-tenant-assertion']!
  const flipped = forged.slice(0, -2) + (forged.at(-2) === 'A' ? 'B' : 'A') + forged.at(-1)
  const rows: Array<[string, Record<string, string>]> = [
    ['no assertion', { 'x-svc-tenant-client-id': 'tenant-b' }],
    ['an assertion for another caller (user B\'s token)', asserted('tenant-b', userB)],
    ['an assertion for another tenant', { ...asserted('tenant-a', userA), 'x-svc-tenant-client-id': 'tenant-b' }],
    ['an expired assertion (issued 2 minutes ago)', asserted('tenant-b', userA, Date.now() - 120_000)],
    ['an assertion from the future (expires in 10 minutes)', asserted('tenant-b', userA, Date.now() + 9 * 60_000)],
    ['a tampered MAC', { 'x-svc-tenant-client-id': 'tenant-b', 'x-svc-tenant-assertion': flipped }],
    ['a MAC under another secret', { 'x-svc-tenant-client-id': 'tenant-b', 'x-svc-tenant-assertion': signTenantAssertion('another-secret-0123456789abcdef-xyz', 'tenant-b', userA) }],
    ['garbage', { 'x-svc-tenant-client-id': 'tenant-b', 'x-svc-tenant-assertion': 'v1.abc.def' }]
  ]
  for (const [name, headers] of rows) t.same(await read(headers), [401, UNRESOLVED], name)
  t.match(await read(asserted('tenant-b', userA, Date.now() - 70_000)), [200, { run_id: run.run_id }], 'expired 10 s ago is within the gate\'s 30 s leeway')
  t.match(await read(asserted('tenant-b', userA)), [200, { run_id: run.run_id }], 'an assertion the front door made for user A and tenant B is honoured')
})

t.test('with the secret and auth off, the assertion binds the tenant to the bearer token all the same', async t => {
  const { url } = await harness(t, { auth: false, secret: true })
  const token = 'opaque-token-of-a-caller'
  const start = (headers: Record<string, string>) => fetch(`${url}/runs`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"message":"m","mode":"echo"}' }).then(async r => [r.status, await r.json()])
  t.same(await start({ 'x-svc-tenant-client-id': 'tenant-b' }), [401, UNRESOLVED], 'a tenant header alone')
  t.same(await start({ authorization: 'Bearer another-token', ...asserted('tenant-b', token) }), [401, UNRESOLVED], 'another token')
  t.match(await start({ authorization: `Bearer ${token}`, ...asserted('tenant-b', token) }), [200, { tenant_id: 'tenant-b' }])
  t.match(await start({}), [200, { tenant_id: 'default' }], 'no tenant header: the default tenant, as before')
})

t.test('an empty, inner-padded, path-like, over-long or repeated tenant header is refused in every mode', async t => {
  const idp = await startIdp(t)
  const token = await idp.sign()
  for (const mode of MODES) {
    const { port } = await harness(t, mode, idp)
    const lines = (tenant: string): string[] => [
      ...(mode.auth || mode.secret ? [`Authorization: Bearer ${token}`] : []),
      ...(mode.secret ? [`X-Svc-Tenant-Assertion: ${signTenantAssertion(SECRET, tenant, token)}`] : [])
    ]
    const refused: Array<[string, string[]]> = [
      ['empty', ['X-Svc-Tenant-Client-Id:', ...lines('')]],
      ['only spaces', ['X-Svc-Tenant-Client-Id:    ', ...lines('')]],
      ['a space inside', ['X-Svc-Tenant-Client-Id: acme x', ...lines('acme x')]],
      ['a path', ['X-Svc-Tenant-Client-Id: ../acme', ...lines('../acme')]],
      ['a slash', ['X-Svc-Tenant-Client-Id: acme/x', ...lines('acme/x')]],
      ['129 characters', [`X-Svc-Tenant-Client-Id: ${'a'.repeat(129)}`, ...lines('a'.repeat(129))]],
      ['two values in one line', ['X-Svc-Tenant-Client-Id: acme, other', ...lines('acme, other')]],
      ['the header twice', ['X-Svc-Tenant-Client-Id: other', 'X-Svc-Tenant-Client-Id: acme', ...lines('acme')]],
      ['the header twice, same value', ['X-Svc-Tenant-Client-Id: acme', 'X-Svc-Tenant-Client-Id: acme', ...lines('acme')]]
    ]
    for (const [name, headers] of refused) {
      const res = await rawRequest(port, 'POST', '/runs', headers, '{"message":"m","mode":"echo"}')
      const refusedByEdge = res.status === 400
      t.ok(refusedByEdge || (res.status === 401 && res.body === JSON.stringify(UNRESOLVED)), `${mode.name}: ${name} → ${res.status} ${res.body}`)
    }
    for (const padded of ['  acme  ', '\tacme\t']) {
      const res = await rawRequest(port, 'POST', '/runs', [`X-Svc-Tenant-Client-Id:${padded}`, ...lines('acme')], '{"message":"m","mode":"echo"}')
      t.match([res.status, JSON.parse(res.body)], [200, { tenant_id: 'acme' }], `${mode.name}: ${JSON.stringify(padded)} on the wire is optional whitespace around "acme" (RFC 9110 §5.5), never another tenant`)
    }
  }
})
