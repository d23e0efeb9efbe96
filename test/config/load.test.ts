import t from 'tap'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { loadConfig, ConfigError, variables, workerCount } from '../../src/config/index.js'
// @ts-expect-error: the script is plain JavaScript, without types
import { configTable, firstTable, FIRST, tableIn } from '../../scripts/config-table.mjs'

t.test('defaults apply and the result is frozen', async t => {
  const c = loadConfig({})
  t.equal(c.port, 8080)
  t.equal(c.harnessPort, 8081)
  t.equal(c.host, '127.0.0.1')
  t.equal(c.bus, 'local')
  t.equal(c.storage, 'fs')
  t.equal(c.telemetryMaxBody, 1024 * 1024)
  t.equal(c.evidenceMaxBytes, 268435456)
  t.equal(c.svcHarnessAuthEnabled, false)
  t.same(c.roles, ['auth', 'ingest', 'frontdoor', 'harness'])
  t.ok(Object.isFrozen(c))
  t.ok(Object.isFrozen(c.roles))
})

t.test('values are parsed by type', async t => {
  const c = loadConfig({ PORT: '9000', SVC_HARNESS_AUTH_ENABLED: '1', IDP_ISSUER: 'https://idp/', IDP_JWKS_URL: 'https://idp/jwks', IDP_RS256_AUDIENCE: 'harness', ROLES: 'auth, ingest', KAFKA_TLS: 'false' })
  t.equal(c.port, 9000)
  t.equal(c.svcHarnessAuthEnabled, true)
  t.same(c.roles, ['auth', 'ingest'])
  t.equal(c.kafkaTls, false)
})

t.test('a bad value stops start-up with a message naming it', async t => {
  t.throws(() => loadConfig({ PORT: 'eighty' }), { name: 'ConfigError', message: /PORT="eighty": must be integer/ })
  t.throws(() => loadConfig({ PORT: '70000' }), /PORT="70000": must be <= 65535/)
  t.throws(() => loadConfig({ BUS: 'rabbit' }), /BUS="rabbit": must be equal to one of the allowed values/)
  t.throws(() => loadConfig({ ROLES: 'auth,web' }), /ROLES/)
  t.throws(() => loadConfig({ S3_ENDPOINT: 'minio:9000' }), /S3_ENDPOINT/)
  t.throws(() => loadConfig({ UWS_ALLOW_FALLBACK: 'maybe' }), /UWS_ALLOW_FALLBACK="maybe": must be boolean/)
})

t.test('an unknown variable under our prefixes is refused, with a suggestion', async t => {
  t.throws(() => loadConfig({ TELEMETRY_BATCH_MAXX: '5' }), /unknown variable TELEMETRY_BATCH_MAXX \(did you mean TELEMETRY_BATCH_MAX\?\)/)
  t.throws(() => loadConfig({ KAFKA_SOMETHING_ELSE: 'x' }), /unknown variable KAFKA_SOMETHING_ELSE/)
  t.doesNotThrow(() => loadConfig({ HOME: '/root', NODE_OPTIONS: '' }), 'variables outside our prefixes are not ours to judge')
})

t.test('variables of the tools around the gateway do not stop it', async t => {
  t.doesNotThrow(() => loadConfig({ GATEWAY_INFRA_RUN: '/tmp/gw-infra-x', GATEWAY_INFRA_CACHE: '/tmp/cache', GATEWAY_ANYTHING: '1' }))
})

t.test('every problem is reported at once', async t => {
  try {
    loadConfig({ PORT: 'x', BUS: 'y', AUTH_TYPO: 'z' })
    t.fail('should throw')
  } catch (err) {
    t.ok(err instanceof ConfigError)
    t.match((err as Error).message, /PORT/)
    t.match((err as Error).message, /BUS/)
    t.match((err as Error).message, /AUTH_TYPO/)
  }
})

t.test('harness auth enabled with incomplete settings fails, naming what is missing', async t => {
  t.throws(() => loadConfig({ SVC_HARNESS_AUTH_ENABLED: 'true', IDP_JWKS_URL: 'https://idp/jwks', IDP_RS256_AUDIENCE: 'a' }), /IDP_ISSUER is required when SVC_HARNESS_AUTH_ENABLED=true/)
  t.throws(() => loadConfig({ BUS: 'kafka' }), /KAFKA_BROKERS is required when BUS=kafka/)
  t.throws(() => loadConfig({ KAFKA_SASL_MECHANISM: 'plain' }), /KAFKA_USERNAME and KAFKA_PASSWORD/)
})

t.test('AUTH_KEY_PUBLISH_LEAD_S must be below AUTH_KEY_ROTATION_S: a key signs until the next one does', async t => {
  t.equal(loadConfig({}).authKeyPublishLeadS, 900)
  t.equal(loadConfig({ AUTH_KEY_ROTATION_S: '60', AUTH_KEY_PUBLISH_LEAD_S: '59' }).authKeyPublishLeadS, 59)
  t.throws(() => loadConfig({ AUTH_KEY_ROTATION_S: '900' }), /AUTH_KEY_PUBLISH_LEAD_S \(900\) must be below AUTH_KEY_ROTATION_S \(900\)/)
})

t.test('AUTH_HASH_THREADS must leave libuv\'s thread pool a thread for lmdb and files', async t => {
  t.throws(() => loadConfig({ AUTH_HASH_THREADS: '4' }), /AUTH_HASH_THREADS \(4\) must be below libuv's thread pool \(UV_THREADPOOL_SIZE, 4\)/)
  t.equal(loadConfig({ AUTH_HASH_THREADS: '3' }).authHashThreads, 3)
  t.equal(loadConfig({ AUTH_HASH_THREADS: '7', UV_THREADPOOL_SIZE: '8' }).authHashThreads, 7)
  t.throws(() => loadConfig({ AUTH_HASH_THREADS: '2', UV_THREADPOOL_SIZE: '0' }), /UV_THREADPOOL_SIZE, 1/, 'libuv runs at least one thread')
})

// The tables are generated (scripts/config-table.mjs --write): names, defaults
// and descriptions all come from the schema, so none can drift by hand.
t.test('docs/configuration.md has every variable, the README the first ones, as the schema generates them', async t => {
  const fix = 'run `npm run build && node scripts/config-table.mjs --write`'
  const full = tableIn(readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8'))
  t.equal(full, configTable(variables), fix)
  const names = [...full.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map(m => m[1])
  t.same(names, variables.map(v => v.name), 'each variable once')
  t.equal(new Set(names).size, names.length)
  const first = tableIn(readFileSync(new URL('../../README.md', import.meta.url), 'utf8'))
  t.equal(first, firstTable(variables), fix)
  t.same([...first.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map(m => m[1]), FIRST)
})

t.test('a JSON file named by a variable is checked, with the variable and file in the message', async t => {
  const { readJsonFile } = await import('../../src/config/index.js')
  const dir = t.testdir({ 'ok.json': '{"a":1}', 'bad.json': '{"a":"x"}', 'broken.json': '{' })
  const schema = { type: 'object', properties: { a: { type: 'integer' } } }
  t.same(readJsonFile('ORGS_FILE', `${dir}/ok.json`, schema), { a: 1 })
  t.throws(() => readJsonFile('ORGS_FILE', `${dir}/bad.json`, schema), { name: 'ConfigError', message: /^ORGS_FILE .*bad\.json: \/a must be integer$/ })
  t.throws(() => readJsonFile('ORGS_FILE', `${dir}/broken.json`, schema), /^ORGS_FILE .*broken\.json: /)
  t.throws(() => readJsonFile('AUTH_CLIENTS_FILE', `${dir}/missing.json`, schema), /^AUTH_CLIENTS_FILE .*missing\.json: ENOENT/)
})

t.test('the tenant assertion secret is at least 32 bytes; HARNESS_URL is a bare http origin and base path', async t => {
  t.throws(() => loadConfig({ HARNESS_TENANT_ASSERTION_SECRET: 'x'.repeat(31) }), /HARNESS_TENANT_ASSERTION_SECRET must be at least 32 bytes/)
  t.equal(loadConfig({ HARNESS_TENANT_ASSERTION_SECRET: 'x'.repeat(32) }).harnessTenantAssertionSecret, 'x'.repeat(32))
  for (const bad of ['https://harness:8081', 'http://user:pw@harness:8081', 'http://harness:8081/?a=1', 'http://harness:8081/#x', 's3://bucket']) {
    t.throws(() => loadConfig({ HARNESS_URL: bad }), /HARNESS_URL/, bad)
  }
  t.equal(loadConfig({ HARNESS_URL: 'http://harness:8081/base/' }).harnessUrl, 'http://harness:8081/base/')
})

t.test('WORKERS is an integer from 1, or auto for the cores this process may use', async t => {
  t.equal(workerCount(loadConfig({}).workers), 1, 'one process by default')
  t.equal(workerCount(loadConfig({ WORKERS: '3' }).workers), 3)
  t.equal(workerCount(loadConfig({ WORKERS: 'auto' }).workers), availableParallelism())
  for (const bad of ['0', '-1', 'two', '1.5', '257']) t.throws(() => loadConfig({ WORKERS: bad }), { name: 'ConfigError', message: /WORKERS=.*an integer from 1 to 256, or auto/ }, bad)
})

const problemsOf = (env: NodeJS.ProcessEnv): string => {
  try {
    loadConfig(env)
    return 'valid'
  } catch (err) {
    t.equal((err as ConfigError).code, 'config_invalid')
    return (err as Error).message
  }
}

t.test('raw values: integers are digits only, around spaces; booleans have four words each way; lists drop empty items', async t => {
  t.equal(loadConfig({ PORT: ' 9000 ' }).port, 9000, 'spaces around an integer')
  for (const raw of ['1e3', '0x1F', '12abc', 'abc12', '9 000', '+80']) t.match(problemsOf({ PORT: raw }), `PORT=${JSON.stringify(raw)}: must be integer`, raw)
  for (const raw of ['true', '1', 'yes', 'on', ' TRUE ', 'On']) t.equal(loadConfig({ KAFKA_TLS: raw }).kafkaTls, true, raw)
  for (const raw of ['false', '0', 'no', 'off', ' OFF ', 'No']) t.equal(loadConfig({ KAFKA_TLS: raw }).kafkaTls, false, raw)
  t.same(loadConfig({ ROLES: ' auth ,, ingest ,' }).roles, ['auth', 'ingest'])
  t.equal(loadConfig({ PORT: '' }).port, 8080, 'an empty variable is an unset one')
})

t.test('the message: every problem on its own line, exactly', async t => {
  t.equal(problemsOf({ PORT: 'x', BUS: 'y' }), 'invalid configuration:\n  - PORT="x": must be integer\n  - BUS="y": must be equal to one of the allowed values')
  t.equal(problemsOf({ KAFKA_SOMETHING_ELSE: 'x' }), 'invalid configuration:\n  - unknown variable KAFKA_SOMETHING_ELSE', 'no suggestion when nothing is close')
  t.equal(problemsOf({ TELEMETRY_BATCH_MA: '5' }), 'invalid configuration:\n  - unknown variable TELEMETRY_BATCH_MA (did you mean TELEMETRY_BATCH_MAX?)', 'one letter short')
  t.equal(problemsOf({ TELEMETRY_BATCH_MAXXX: '5' }), 'invalid configuration:\n  - unknown variable TELEMETRY_BATCH_MAXXX (did you mean TELEMETRY_BATCH_MAX?)', 'two letters off')
  t.equal(problemsOf({ TELEMETRY_BATCH_MAXXXX: '5' }), 'invalid configuration:\n  - unknown variable TELEMETRY_BATCH_MAXXXX', 'three letters off is no longer a typo')
  t.equal(problemsOf({ PORT: 'x', BUS: 'kafka' }), 'invalid configuration:\n  - PORT="x": must be integer', 'the cross-checks wait until every value is valid')
})

t.test('the cross-checks, each at its edge', async t => {
  t.equal(problemsOf({ BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9092' }), 'valid')
  t.equal(problemsOf({ BUS: 'kafka', KAFKA_BROKERS: ' , ' }), 'invalid configuration:\n  - KAFKA_BROKERS is required when BUS=kafka')
  const sasl = 'invalid configuration:\n  - KAFKA_USERNAME and KAFKA_PASSWORD are required when KAFKA_SASL_MECHANISM is set'
  t.equal(problemsOf({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_USERNAME: 'u' }), sasl, 'no password')
  t.equal(problemsOf({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_PASSWORD: 'p' }), sasl, 'no user')
  t.equal(problemsOf({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_USERNAME: 'u', KAFKA_PASSWORD: 'p' }), 'valid')
  t.equal(problemsOf({ KAFKA_USERNAME: 'u' }), 'valid', 'a user without SASL is not an error')
  const batch = { TELEMETRY_BATCH_MAX_BODY: String(2 * 1024 * 1024) }
  t.equal(problemsOf({ HTTP_BODY_BUFFER_BYTES: String(2 * 1024 * 1024), TELEMETRY_MAX_BODY: String(2 * 1024 * 1024), ...batch }), 'valid', 'a buffer of exactly one body')
  t.equal(problemsOf({ HTTP_BODY_BUFFER_BYTES: String(2 * 1024 * 1024), TELEMETRY_MAX_BODY: String(2 * 1024 * 1024 + 1), ...batch }),
    'invalid configuration:\n  - HTTP_BODY_BUFFER_BYTES (2097152) must hold at least one TELEMETRY_MAX_BODY (2097153)')
  t.equal(problemsOf({ HTTP_BODY_BUFFER_BYTES: String(2 * 1024 * 1024), TELEMETRY_BATCH_MAX_BODY: String(2 * 1024 * 1024 + 1) }),
    'invalid configuration:\n  - HTTP_BODY_BUFFER_BYTES (2097152) must hold at least one TELEMETRY_BATCH_MAX_BODY (2097153)')
  t.equal(problemsOf({ STORAGE_BUFFER_BYTES: String(8 * 1024 * 1024) }), 'valid', 'a pool of exactly one part')
  t.equal(problemsOf({ STORAGE_BUFFER_BYTES: String(8 * 1024 * 1024 - 1) }),
    'invalid configuration:\n  - STORAGE_BUFFER_BYTES (8388607) must hold at least one S3_PART_SIZE (8388608)')
})

t.test('HARNESS_URL: not a URL, a user alone or a password alone are refused with their own message', async t => {
  t.equal(problemsOf({ HARNESS_URL: 'http://[::1:8081' }), 'invalid configuration:\n  - HARNESS_URL="http://[::1:8081" is not a URL')
  for (const bad of ['http://user@harness:8081', 'http://:pw@harness:8081']) {
    t.equal(problemsOf({ HARNESS_URL: bad }), `invalid configuration:\n  - HARNESS_URL="${bad}" must be http://host[:port][/base-path], without credentials, query or fragment`, bad)
  }
})

t.test('WORKERS: spaces around it, several digits, and 256 itself are fine', async t => {
  t.equal(workerCount(' 3 '), 3)
  t.equal(workerCount('12'), 12)
  t.equal(workerCount('256'), 256)
})

t.test('TELEMETRY_METRICS_SCHEMAS adds values to the spec\'s, never replaces it', async t => {
  t.same(loadConfig({}).telemetryMetricsSchemas, ['svc.metrics@1.0'], 'the spec\'s value alone by default')
  t.same(loadConfig({ TELEMETRY_METRICS_SCHEMAS: 'svc.metrics@1.0, miot.metrics@1.0' }).telemetryMetricsSchemas, ['svc.metrics@1.0', 'miot.metrics@1.0'])
  t.equal(problemsOf({ TELEMETRY_METRICS_SCHEMAS: 'miot.metrics@1.0' }),
    'invalid configuration:\n  - TELEMETRY_METRICS_SCHEMAS must include svc.metrics@1.0, the spec\'s value, beside the values it adds')
  t.equal(problemsOf({ TELEMETRY_METRICS_SCHEMAS: `svc.metrics@1.0,${'x'.repeat(65)}` }),
    `invalid configuration:\n  - TELEMETRY_METRICS_SCHEMAS: "${'x'.repeat(65)}" must be 1 to 64 visible ASCII characters`)
  t.equal(problemsOf({ TELEMETRY_METRICS_SCHEMAS: `svc.metrics@1.0,${'x'.repeat(64)}` }), 'valid', '64 characters')
  t.equal(problemsOf({ TELEMETRY_METRICS_SCHEMAS: 'svc.metrics@1.0,mïot' }),
    'invalid configuration:\n  - TELEMETRY_METRICS_SCHEMAS: "mïot" must be 1 to 64 visible ASCII characters')
})

t.test('a resumable upload may not outlive the bucket\'s rule that aborts incomplete multipart uploads', async t => {
  t.throws(() => loadConfig({ STORAGE: 's3', EVIDENCE_UPLOAD_EXPIRES_S: String(2 * 86_400), S3_ABORT_INCOMPLETE_UPLOADS_DAYS: '1' }), /EVIDENCE_UPLOAD_EXPIRES_S \(172800\) must not pass S3_ABORT_INCOMPLETE_UPLOADS_DAYS \(1 d\)/)
  t.equal(loadConfig({ STORAGE: 's3', EVIDENCE_UPLOAD_EXPIRES_S: String(2 * 86_400), S3_ABORT_INCOMPLETE_UPLOADS_DAYS: '2' }).evidenceUploadExpiresS, 172_800)
  t.equal(loadConfig({ STORAGE: 's3', EVIDENCE_UPLOAD_EXPIRES_S: String(9 * 86_400), S3_ABORT_INCOMPLETE_UPLOADS_DAYS: '0' }).evidenceUploadExpiresS, 777_600, 'no rule set by the gateway (0)')
  t.equal(loadConfig({ EVIDENCE_UPLOAD_EXPIRES_S: String(9 * 86_400) }).evidenceUploadExpiresS, 777_600, 'the filesystem store has no such rule')
})
