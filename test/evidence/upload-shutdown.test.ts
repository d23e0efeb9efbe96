import t from 'tap'
import { randomUUID } from 'node:crypto'
import '../helpers/no-keepalive.js'
import { spawnGateway, tailBus } from '../helpers/child.js'
import { CLIENT, login, writeJson } from '../helpers/gateway.js'
import { sharedInfra, type InfraEnv } from '../helpers/infra.js'
import { eventually } from '../helpers/http.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence } from '../helpers/multipart.js'
import { partialUpload, within } from '../helpers/uploads.js'
import { objectKeys, openUploads, s3Client, uploadsWithParts } from '../helpers/s3.js'
import { recordFigures } from '../helpers/figures.js'

const MiB = 1024 * 1024

/** A gateway process on the shared MinIO with a bucket of its own; `start` runs it (again) on the same DATA_DIR. */
function gatewayOnS3 (t: any, infra: InfraEnv, env: Record<string, string> = {}) {
  const dir = t.testdir()
  const bucket = `shutdown-${randomUUID()}`
  const base = {
    DATA_DIR: dir, AUTH_CLIENTS_FILE: writeJson(dir, 'clients.json', [CLIENT]), LOG_LEVEL: 'info',
    STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_PART_SIZE: String(5 * MiB),
    AWS_ACCESS_KEY_ID: infra.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: infra.AWS_SECRET_ACCESS_KEY, AWS_REGION: infra.AWS_REGION, ...env
  }
  const start = async () => {
    const child = spawnGateway(t, ['start'], base)
    const { port } = await child.waitFor('gateway listening') as { port: number }
    const url = `http://127.0.0.1:${port}`
    return { child, port, url, token: await login(url) }
  }
  return { dir, bucket, start, s3: s3Client(infra) }
}

/** 12 of a 20 MiB clip's bytes sent, the rest held back; resolves once its multipart upload is open and holds a part. */
async function stalledUpload (port: number, token: string, eventId: string, s3: ReturnType<typeof s3Client>, bucket: string) {
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: eventId })), mediaPart(clip(20 * MiB).data)])
  const upload = await partialUpload(port, token, body, body.length - 8 * MiB)
  const open = await eventually(() => uploadsWithParts(s3, bucket), u => u.length === 1)
  if (open.length !== 1) throw new Error('no multipart upload was opened')
  return upload
}

t.test('SIGTERM mid-upload: past SHUTDOWN_TIMEOUT_MS the client gets 503 shutting_down, nothing is left, a restart accepts the same event_id', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  // The answer waits for the rest of the body (HTTP_DRAIN_TIMEOUT_MS), which this client never sends.
  const gw = gatewayOnS3(t, infra, { SHUTDOWN_TIMEOUT_MS: '300', HTTP_DRAIN_TIMEOUT_MS: '1000' })
  const first = await gw.start()
  const upload = await stalledUpload(first.port, first.token, 'evt-sigterm', gw.s3, gw.bucket)
  t.teardown(() => upload.socket.destroy())

  first.child.proc.kill('SIGTERM')
  const res = await within(upload.response, 30_000, 'an answer to the upload in flight at SIGTERM')
  t.equal(res.status, 503)
  t.same(res.body, { status: 'error', code: 'shutting_down', details: { request: 'server is shutting down' } }, 'the evidence error shape')
  t.equal(await first.child.exit, 0)
  t.same(await openUploads(gw.s3, gw.bucket), [], 'its multipart upload was aborted')
  t.same(await objectKeys(gw.s3, gw.bucket), [])

  const second = await gw.start()
  const retry = await postEvidence(second.url, second.token, multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-sigterm' })), mediaPart(clip(MiB).data)]))
  t.same([retry.status, retry.body], [202, { status: 'accepted', event_id: 'evt-sigterm', media_count: 1 }], 'the claim was released: no 409 after the restart')
  t.equal(retry.headers.get('idempotent-replay'), null)
  second.child.proc.kill('SIGTERM')
  t.equal(await second.child.exit, 0)
  const published = (await tailBus(gw.dir, 'stream.events.v1')).filter(m => m.value.event_id === 'evt-sigterm')
  t.equal(published.length, 1, 'published once: the retry')
  recordFigures('faults', 'SIGTERM mid-upload past the shutdown deadline (MinIO)', {
    sent: 2, acknowledged: 1, found_downstream: published.length, duplicates: 0,
    left_in_storage: (await openUploads(gw.s3, gw.bucket)).length + (await objectKeys(gw.s3, gw.bucket)).length - 1, faults_injected: 1, answered_5xx: [res, retry].filter(r => r.status >= 500).length
  })
})

t.test('kill -9 mid-upload: the restarted gateway\'s first sweep aborts the multipart upload the dead one left', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const gw = gatewayOnS3(t, infra)
  const first = await gw.start()
  const upload = await stalledUpload(first.port, first.token, 'evt-killed', gw.s3, gw.bucket)
  t.teardown(() => upload.socket.destroy())
  first.child.proc.kill('SIGKILL')
  await first.child.exit
  t.equal((await openUploads(gw.s3, gw.bucket)).length, 1, 'the dead process left its multipart upload open')

  const second = await gw.start()
  const swept = await within(second.child.waitFor('swept a recorded multipart upload'), 60_000, 'a sweep at start')
  t.equal(swept['key'], `${CLIENT.client_id}/${new Date().toISOString().slice(0, 10).replace(/-/g, '/')}/evt-killed/0.mp4`)
  t.same(await openUploads(gw.s3, gw.bucket), [], 'nothing left in the bucket\'s incomplete uploads')
  second.child.proc.kill('SIGTERM')
  t.equal(await second.child.exit, 0)
  const published = await tailBus(gw.dir, 'stream.events.v1')
  t.same(published, [], 'nothing published')
  recordFigures('faults', 'gateway killed -9 mid-upload, sweep at restart (MinIO)', {
    sent: 1, acknowledged: 0, found_downstream: published.length, duplicates: 0,
    left_in_storage: (await openUploads(gw.s3, gw.bucket)).length + (await objectKeys(gw.s3, gw.bucket)).length, faults_injected: 1, answered_5xx: 0
  })
})
