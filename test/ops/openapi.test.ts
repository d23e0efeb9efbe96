import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import '../helpers/no-keepalive.js'
import { startTestGateway, CLIENT } from '../helpers/gateway.js'
import { clip } from '../helpers/multipart.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../../', import.meta.url))
const bin = (name: string): string => join(root, 'node_modules', '.bin', name)
const METHODS = ['get', 'put', 'post', 'delete', 'patch']

type Doc = { servers: Array<{ url: string }>, paths: Record<string, Record<string, any>>, components: Record<string, any>, tags: Array<{ name: string }> }
const operations = (doc: Doc): Array<[string, string, any]> =>
  Object.entries(doc.paths).flatMap(([path, item]) => METHODS.filter(m => item[m] !== undefined).map(m => [m, path, item[m]] as [string, string, any]))

async function documents (t: any) {
  const gw = await startTestGateway(t)
  const main = await (await fetch(`${gw.url}/openapi.json`)).json() as Doc
  const harness = await (await fetch(`${gw.harnessUrl}/openapi.json`)).json() as Doc
  return { gw, main, harness }
}

t.test('each port describes every route it serves, at its own address, each operation named, tagged and answered in full', async t => {
  const { gw, main, harness } = await documents(t)
  t.same(main.servers.map(s => s.url), [gw.url], 'servers: the running port')
  t.same(harness.servers.map(s => s.url), [gw.harnessUrl], 'the harness\'s: HARNESS_PORT as configured, not 8081')
  const mainRoutes = operations(main).map(([m, p]) => `${m.toUpperCase()} ${p}`)
  for (const route of ['POST /api/v1/login', 'GET /.well-known/jwks.json', 'GET /health', 'GET /health/ready', 'GET /health/ready/{component}', 'GET /metrics', 'GET /openapi.json',
    'POST /v1/asset/track', 'POST /v1/asset/track:batch', 'GET /v1/asset/track:stream', 'POST /v1/stream/events',
    'GET /api/v1/orgs/{slug}/harness/runs', 'POST /api/v1/orgs/{slug}/harness/runs:start', 'GET /api/v1/orgs/{slug}/harness/runs/{id}/stream', 'POST /api/v1/orgs/{slug}/harness/runs/{id}/cancel']) t.ok(mainRoutes.includes(route), `PORT: ${route}`)
  const harnessRoutes = operations(harness).map(([m, p]) => `${m.toUpperCase()} ${p}`)
  for (const route of ['GET /runs', 'POST /runs', 'POST /runs:start', 'GET /runs:watch', 'GET /runs/{id}', 'GET /runs/{id}/stream', 'POST /runs/{id}/cancel', 'GET /skills', 'GET /health', 'GET /health/ready']) t.ok(harnessRoutes.includes(route), `HARNESS_PORT: ${route}`)
  t.notOk(harnessRoutes.includes('GET /metrics'), 'the harness port of this process serves no /metrics, and says so')
  t.notOk([...mainRoutes, ...harnessRoutes].some(r => r.includes('/console')), 'the console is no API')

  const flows = main.components['securitySchemes'].oauth2.flows.clientCredentials
  t.equal(flows.tokenUrl, `${gw.url}/api/v1/login`, 'oauth2 client credentials at the login route')
  t.same(Object.keys(flows.scopes).sort(), ['asset:track:write', 'stream:write', 'stream:write:any-client'])
  t.same(main.paths['/v1/asset/track']!['post'].security, [{ oauth2: ['asset:track:write'] }])

  for (const doc of [main, harness]) {
    const ids = operations(doc).map(([, , op]) => op.operationId)
    t.equal(new Set(ids).size, ids.length, 'operationIds unique')
    for (const [method, path, op] of operations(doc)) {
      const what = `${method.toUpperCase()} ${path}`
      t.match(op.operationId, /^[a-z][A-Za-z]+$/, `${what}: operationId`)
      t.ok(op.tags?.length === 1 && doc.tags.some(tag => tag.name === op.tags[0]), `${what}: a declared tag`)
      t.ok(op.responses['503'] !== undefined && op.responses['500'] !== undefined, `${what}: 500 and 503`)
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        t.ok(response.headers?.['X-Request-Id'] !== undefined, `${what} ${status}: X-Request-Id`)
        if (status === '503' || status === '429') t.ok(response.headers['Retry-After'] !== undefined, `${what} ${status}: Retry-After`)
        if (Number(status) >= 400 && method !== 'get') t.ok(response.content !== undefined, `${what} ${status}: a body schema`)
      }
    }
  }
  t.ok(main.paths['/v1/stream/events']!['post'].responses['202'].headers['Idempotent-Replay'], 'Idempotent-Replay on the evidence answer')
})

t.test('Redocly\'s recommended rules find no error in either document', async t => {
  const { main, harness } = await documents(t)
  const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [name, doc] of [['main', main], ['harness', harness]] as const) {
    const file = join(dir, `${name}.json`)
    writeFileSync(file, JSON.stringify(doc))
    const { stdout } = await run(bin('redocly'), ['lint', '--extends', 'recommended', '--format', 'json', file], { maxBuffer: 16 * 1024 * 1024, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } }).catch(err => err as { stdout: string })
    const report = JSON.parse(stdout.slice(stdout.indexOf('{'))) as { totals: { errors: number, warnings: number }, problems: Array<{ ruleId: string, severity: string, message: string }> }
    t.equal(report.totals.errors, 0, `${name}: ${JSON.stringify(report.problems.filter(p => p.severity === 'error'))}`)
    t.comment(`${name}: ${report.totals.warnings} warnings (${[...new Set(report.problems.map(p => p.ruleId))].join(', ')})`)
  }
})

t.test('a client generated with openapi-typescript and openapi-fetch logs in, tracks a record, posts an event and reads a run', async t => {
  const { gw, main, harness } = await documents(t)
  const dir = mkdtempSync(join(tmpdir(), 'openapi-client-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'))
  writeFileSync(join(dir, 'main.json'), JSON.stringify(main))
  writeFileSync(join(dir, 'harness.json'), JSON.stringify(harness))
  await run(bin('openapi-typescript'), [join(dir, 'main.json'), '-o', join(dir, 'gateway.ts')])
  await run(bin('openapi-typescript'), [join(dir, 'harness.json'), '-o', join(dir, 'harness.ts')])
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}')
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, outDir: 'out', skipLibCheck: true, types: [] }, include: ['*.ts'] }))
  // The integrator's program: every call typed by the generated paths, so a route, a body or an answer the document gets wrong fails to compile.
  writeFileSync(join(dir, 'client.ts'), `
import createClient from 'openapi-fetch'
import type { paths } from './gateway.js'
import type { paths as harnessPaths } from './harness.js'

export async function scenario (baseUrl: string, harnessUrl: string, clientId: string, secret: string, clipBytes: Uint8Array, sha256: string) {
  const gateway = createClient<paths>({ baseUrl })
  const login = await gateway.POST('/api/v1/login', { body: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret, audience: 'evidence-gateway' } })
  if (login.data === undefined) throw new Error('login failed: ' + JSON.stringify(login.error))
  const token: string = login.data.access_token
  const authorization = 'Bearer ' + token
  const track = await gateway.POST('/v1/asset/track', {
    params: { header: { 'X-Request-Id': 'typed-1', 'X-Request-Timestamp': '1763799330' } },
    headers: { authorization },
    body: { asset_id: 'typed-truck', timestamp: '2026-11-22T08:15:30Z', gps: { latitude: 52.5, longitude: 13.4 } }
  })
  const form = new FormData()
  form.append('envelope', new Blob([JSON.stringify({ schema_version: '1.0', event_id: 'typed-evt', event_type: 'warehouse.restricted_zone.person', occurred_at: '2026-11-22T08:15:30Z', subject: { device_id: 'cam-1' }, media: [{ checksum_sha256: sha256 }] })], { type: 'application/json' }))
  form.append('media', new Blob([new Uint8Array(clipBytes)], { type: 'video/mp4' }), 'clip.mp4')
  const event = await gateway.POST('/v1/stream/events', { headers: { authorization }, body: form as never, bodySerializer: body => body as unknown as FormData })
  const harness = createClient<harnessPaths>({ baseUrl: harnessUrl })
  const started = await harness.POST('/runs', { body: { message: 'typed', mode: 'echo' } })
  const runId: string | undefined = started.data?.run_id
  const read = await harness.GET('/runs/{id}', { params: { path: { id: runId ?? '' } } })
  return {
    track: { status: track.response.status, body: track.data },
    event: { status: event.response.status, body: event.data },
    run: { status: read.response.status, runStatus: read.data?.status, events: read.data?.events?.length }
  }
}
`)
  try {
    await run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json')])
  } catch (err) {
    t.fail(`the typed client does not compile: ${(err as { stdout?: string }).stdout ?? ''}`)
    return
  }
  const { scenario } = await import(pathToFileURL(join(dir, 'out', 'client.js')).href) as { scenario: (...args: unknown[]) => Promise<any> }
  const media = clip(32_000)
  const result = await scenario(gw.url, gw.harnessUrl, CLIENT.client_id, CLIENT.client_secret, media.data, media.sha256)
  t.same(result.track, { status: 200, body: { status: 'success', message: 'message sent successfully' } })
  t.same(result.event, { status: 202, body: { status: 'accepted', event_id: 'typed-evt', media_count: 1 } })
  t.equal(result.run.status, 200)
  t.equal(result.run.runStatus, 'succeeded')
  t.ok(result.run.events > 0, 'the run\'s events')
})
