import t from 'tap'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import '../helpers/no-keepalive.js'
import { spawnGateway, tailBus } from '../helpers/child.js'
import { CLIENT, login, writeJson } from '../helpers/gateway.js'
import { eventually, rawConnect } from '../helpers/http.js'
import { recordFigures } from '../helpers/figures.js'
import { settled } from '../helpers/settle.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence, BOUNDARY } from '../helpers/multipart.js'

const MiB = 1024 * 1024

/** Every file under `root` with its size, relative paths. */
function files (root: string): Array<[string, number]> {
  if (!existsSync(root)) return []
  return readdirSync(root, { recursive: true, withFileTypes: true }).filter(d => d.isFile())
    .map(d => join(d.parentPath, d.name)).map(p => [p.slice(root.length + 1), statSync(p).size] as [string, number]).sort()
}

/** Folders under `root` with nothing in them, apart from the partial-file folder itself. */
function emptyFolders (root: string): string[] {
  return readdirSync(root, { recursive: true, withFileTypes: true }).filter(d => d.isDirectory())
    .map(d => join(d.parentPath, d.name)).filter(p => readdirSync(p).length === 0).map(p => p.slice(root.length + 1)).filter(p => p !== '.partial')
}

t.test('kill -9 mid-upload: after a restart the same event_id is stored and published once, and nothing is left behind', async t => {
  const dir = t.testdir()
  const objects = join(dir, 'objects')
  const env = { DATA_DIR: dir, AUTH_CLIENTS_FILE: writeJson(dir, 'clients.json', [CLIENT]), S3_PART_SIZE: String(5 * MiB) }
  const first = spawnGateway(t, ['start'], env)
  const { port } = await first.waitFor('gateway listening') as { port: number }
  const url = `http://127.0.0.1:${port}`
  const token = await login(url)

  const media = clip(12 * MiB)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-crash', media: [{ checksum_sha256: media.sha256 }] })), mediaPart(media.data)])
  const socket = await rawConnect(port)
  socket.on('error', () => undefined)
  socket.write(`POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`)
  socket.write(body.subarray(0, 7 * MiB))
  const partial = await eventually(async () => files(objects), f => f.some(([, size]) => size >= 5 * MiB), 30_000)
  t.ok(partial.some(([, size]) => size >= 5 * MiB), 'a part of the clip is on disk when the process dies')
  first.proc.kill('SIGKILL')
  await first.exit
  socket.destroy()

  const second = spawnGateway(t, ['start'], env)
  const restarted = `http://127.0.0.1:${(await second.waitFor('gateway listening'))['port']}`
  t.same(files(objects), [], 'the partial file of the killed upload is gone at start')

  const retry = await postEvidence(restarted, token, body)
  t.same([retry.status, retry.body], [202, { status: 'accepted', event_id: 'evt-crash', media_count: 1 }], 'the retry is stored, not answered 409')
  t.equal(retry.headers.get('idempotent-replay'), null, 'and is not a replay')

  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '/')
  t.same(files(objects), [[`${CLIENT.client_id}/${day}/evt-crash/0.mp4`, 12 * MiB]], 'stored once')
  t.same(emptyFolders(objects), [], 'no empty folder left')
  const drained = await eventually(async () => (await (await fetch(`${restarted}/health/ready`)).json() as any).components.outbox.backlog, n => n === 0)
  t.equal(drained, 0, 'the relay is done')
  // settled fails on a second copy, however late it comes.
  const published = await settled(() => tailBus(dir, 'stream.events.v1'), 1)
  t.equal(published[0]!.value.event_id, 'evt-crash', 'published once')
  recordFigures('faults', 'gateway killed -9 mid-upload (local disk, local bus)', {
    sent: 2, acknowledged: 1, found_downstream: published.length, duplicates: 0,
    left_in_storage: files(objects).length - 1 + emptyFolders(objects).length, faults_injected: 1, answered_5xx: retry.status >= 500 ? 1 : 0
  })
})
