import t from 'tap'
import { randomUUID } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SharedDocuments } from '../../src/cluster/index.js'
import { ConfigError, loadConfig } from '../../src/config/index.js'
import { checkConditionalWrites } from '../../src/storage/index.js'
import { runGateway } from '../helpers/child.js'
import { sharedInfra } from '../helpers/infra.js'
import { gatewayKeys, s3Client } from '../helpers/s3.js'
import { startStandIn } from '../helpers/s3-standin.js'

// The stand-in checks no signature, but the SDK signs: any credentials do when the shared ones are not set.
process.env['AWS_ACCESS_KEY_ID'] ??= 'stand-in'
process.env['AWS_SECRET_ACCESS_KEY'] ??= 'stand-in'

function documentsOn (t: any, endpoint: string, bucket: string) {
  const config = loadConfig({ STORAGE: 's3', S3_ENDPOINT: endpoint, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_REGION: 'us-east-1' })
  const documents = new SharedDocuments(config)
  t.teardown(() => documents.stop())
  return { config, documents }
}

t.test('MinIO honours If-None-Match: * and If-Match on PutObject: the check passes and leaves no probe behind', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const bucket = `conditions-${randomUUID()}`
  const { config, documents } = documentsOn(t, infra.S3_ENDPOINT, bucket)
  await documents.start()
  await t.resolves(checkConditionalWrites(documents, config))
  t.same(await gatewayKeys(s3Client(infra), bucket), [], 'nothing left under _gateway/')
})

t.test('a store that ignores the conditions, or If-Match only, fails the check, named with its endpoint and bucket; the probe is removed', async t => {
  for (const [conditions, ignored] of [['none', /ignores If-None-Match: \* on PutObject/], ['if-none-match', /ignores If-Match on PutObject/]] as const) {
    const standIn = await startStandIn(t, { conditions })
    const { config, documents } = documentsOn(t, standIn.endpoint, 'evidence')
    const err = await checkConditionalWrites(documents, config).then(() => undefined, (e: unknown) => e)
    t.ok(err instanceof ConfigError, `${conditions}: a configuration error (printed as one line at start)`)
    t.match((err as Error).message, new RegExp(`^the object store at ${standIn.endpoint} \\(bucket evidence\\) `), `${conditions}: names the endpoint and the bucket`)
    t.match((err as Error).message, ignored, `${conditions}: says what it ignores`)
    t.same([...standIn.objects.keys()], [], `${conditions}: the probe is removed`)
  }
})

t.test('a cluster node refuses to start on a store that ignores the conditions: one line, no stack, naming the endpoint and the bucket', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const standIn = await startStandIn(t, { conditions: 'none' })
  const id = randomUUID()
  const { code, stderr } = await runGateway(['start'], {
    DATA_DIR: mkdtempSync(join(tmpdir(), 'gw-conditions-')), PORT: '0', HARNESS_PORT: '0', ROLES: 'auth,ingest',
    STORAGE: 's3', S3_ENDPOINT: standIn.endpoint, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: 'evidence',
    AWS_ACCESS_KEY_ID: 'stand-in', AWS_SECRET_ACCESS_KEY: 'stand-in', AWS_REGION: 'us-east-1',
    BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_EVIDENCE: `evidence-${id}`, TOPIC_TELEMETRY: `telemetry-${id}`, TOPIC_RUNS: `runs-${id}`
  })
  t.equal(code, 1, 'exit code 1')
  const lines = stderr.split('\n').filter(l => l !== '' && !/NodeVersionSupportWarning|^versions|^will require|^To continue|^and security|^More information|^\(Use `node/.test(l))
  t.equal(lines.length, 1, `one line: ${stderr}`)
  t.match(lines[0], new RegExp(`^gateway: the object store at ${standIn.endpoint} \\(bucket evidence\\) ignores If-None-Match: \\* on PutObject`))
  t.same(standIn.requests.filter(r => r.startsWith('PUT') && !r.includes('/_gateway/probe/')), [], 'nothing written but the probe: no key, no heartbeat')
  t.same([...standIn.objects.keys()], [], 'and the probe removed')
})
