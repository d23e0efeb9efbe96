import t from 'tap'
import { GetBucketLifecycleConfigurationCommand, PutBucketLifecycleConfigurationCommand, S3Client, type LifecycleRule } from '@aws-sdk/client-s3'
import { randomUUID } from 'node:crypto'
import pino from 'pino'
import { loadConfig } from '../../src/config/index.js'
import { openState } from '../../src/state/index.js'
import { createObjectStore, soleOwner } from '../../src/storage/index.js'
import { ABORT_RULE_ID, withAbortRule } from '../../src/storage/lifecycle.js'
import { sharedInfra } from '../helpers/infra.js'
import { s3Client } from '../helpers/s3.js'
import { startStandIn } from '../helpers/s3-standin.js'

// The stand-in checks no signature, but the SDK signs: any credentials do when the shared ones are not set.
process.env['AWS_ACCESS_KEY_ID'] ??= 'stand-in'
process.env['AWS_SECRET_ACCESS_KEY'] ??= 'stand-in'

const OTHER: LifecycleRule = { ID: 'operators-tmp', Status: 'Enabled', Filter: { Prefix: 'tmp/' }, Expiration: { Days: 3 } }
const ours = (days: number): LifecycleRule => ({ ID: ABORT_RULE_ID, Status: 'Enabled', Filter: { Prefix: '' }, AbortIncompleteMultipartUpload: { DaysAfterInitiation: days } })

/** An S3 store started on `endpoint` and `bucket`; its log lines. */
async function startStore (t: any, endpoint: string, bucket: string, env: Record<string, string> = {}): Promise<Array<Record<string, unknown>>> {
  const state = openState(t.testdir())
  const lines: Array<Record<string, unknown>> = []
  const log = pino({ level: 'info' }, { write: (line: string) => { lines.push(JSON.parse(line)) } })
  const config = loadConfig({ STORAGE: 's3', S3_ENDPOINT: endpoint, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_REGION: 'us-east-1', ...env })
  const store = createObjectStore(config, state, soleOwner(), log)
  await store.start()
  await store.stop?.()
  await state.close()
  return lines
}

const client = (endpoint: string): S3Client => new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true })
const rulesOf = async (s3: S3Client, bucket: string): Promise<LifecycleRule[]> => (await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: bucket }))).Rules ?? []

t.test('the rule is added to the bucket\'s rules, never in their place; updated when its days change; an operator\'s own rule for the whole bucket stands', async t => {
  t.same(withAbortRule([], 1), [ours(1)], 'a bucket without rules')
  t.same(withAbortRule([OTHER], 1), [OTHER, ours(1)], 'beside the operator\'s rules')
  t.equal(withAbortRule([OTHER, ours(1)], 1), undefined, 'already there: nothing to write')
  t.same(withAbortRule([ours(7), OTHER], 1), [ours(1), OTHER], 'other days: ours is updated in its place')
  t.same(withAbortRule([{ ...ours(1), Status: 'Disabled' }], 1), [ours(1)], 'ours disabled by hand: enabled (S3_ABORT_INCOMPLETE_UPLOADS_DAYS=0 is the way to turn it off)')
  const operators: LifecycleRule = { ID: 'cleanup', Status: 'Enabled', Filter: {}, AbortIncompleteMultipartUpload: { DaysAfterInitiation: 7 } }
  t.equal(withAbortRule([operators], 1), undefined, 'the operator\'s rule for the whole bucket stands, whatever its days')
  t.equal(withAbortRule([{ ...operators, Filter: undefined }], 1), undefined, 'also without a filter')
  for (const filter of [{ Prefix: 'videos/' }, { Tag: { Key: 'a', Value: 'b' } }, { ObjectSizeGreaterThan: 1 }, { And: { Prefix: 'x/' } }]) {
    t.same(withAbortRule([{ ...operators, Filter: filter }], 1), [{ ...operators, Filter: filter }, ours(1)], `nor one for part of it: ${JSON.stringify(filter)}`)
  }
  t.same(withAbortRule([{ ...operators, Status: 'Disabled' }], 1), [{ ...operators, Status: 'Disabled' }, ours(1)], 'nor a disabled one')
})

t.test('at start, a store that accepts the rule has it merged into the bucket\'s lifecycle, once', async t => {
  const standIn = await startStandIn(t)
  const s3 = client(standIn.endpoint)
  t.teardown(() => s3.destroy())
  await s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket: 'b', LifecycleConfiguration: { Rules: [OTHER] } }))
  const lines = await startStore(t, standIn.endpoint, 'b')
  t.same(await rulesOf(s3, 'b'), [OTHER, ours(1)], 'the operator\'s rule kept, the gateway\'s added (S3_ABORT_INCOMPLETE_UPLOADS_DAYS, 1 by default)')
  t.match(lines.find(l => String(l['msg']).startsWith('the bucket\'s lifecycle')), { days: 1, changed: true })
  const puts = (): number => standIn.requests.filter(r => r.startsWith('PUT /b?lifecycle')).length
  const before = puts()
  await startStore(t, standIn.endpoint, 'b')
  t.equal(puts(), before, 'a second start reads it and writes nothing')
  await startStore(t, standIn.endpoint, 'b', { S3_ABORT_INCOMPLETE_UPLOADS_DAYS: '3' })
  t.same(await rulesOf(s3, 'b'), [OTHER, ours(3)], 'other days: updated in place')
})

t.test('S3_ABORT_INCOMPLETE_UPLOADS_DAYS=0 leaves the bucket\'s lifecycle alone: not even read', async t => {
  const standIn = await startStandIn(t)
  await startStore(t, standIn.endpoint, 'b', { S3_ABORT_INCOMPLETE_UPLOADS_DAYS: '0' })
  t.same(standIn.requests.filter(r => r.includes('lifecycle')), [])
})

t.test('credentials without the lifecycle permission: the store starts, and says the rule is not set', async t => {
  const standIn = await startStandIn(t, { lifecycle: 'denied' })
  const lines = await startStore(t, standIn.endpoint, 'b')
  t.match(lines.find(l => l['level'] === 40), { msg: /could not set the bucket's lifecycle rule/, bucket: 'b', days: 1, err: { name: 'AccessDenied' } })
})

t.test('MinIO, which refuses the rule: the store starts, and the bucket\'s own rules are as they were', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const bucket = `lifecycle-${randomUUID()}`
  const s3 = s3Client(infra)
  t.teardown(() => s3.destroy())
  const lines = await startStore(t, infra.S3_ENDPOINT, bucket, { S3_ABORT_INCOMPLETE_UPLOADS_DAYS: '0' })
  t.same(lines.filter(l => l['level'] === 40), [])
  await s3.send(new PutBucketLifecycleConfigurationCommand({ Bucket: bucket, LifecycleConfiguration: { Rules: [OTHER] } }))
  const refused = await startStore(t, infra.S3_ENDPOINT, bucket)
  t.match(refused.find(l => l['level'] === 40), { msg: /could not set the bucket's lifecycle rule/ }, 'a warning')
  t.same(await rulesOf(s3, bucket), [OTHER], 'the operator\'s rule is still there, alone')
})
