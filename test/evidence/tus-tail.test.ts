import t from 'tap'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { loadConfig } from '../../src/config/index.js'
import { GatewayError } from '../../src/errors.js'
import { HashPool, LocalUploadStates, type UploadRecord } from '../../src/evidence/index.js'
import { append } from '../../src/evidence/tus/append.js'
import { HeldUpload, type LockOwner } from '../../src/evidence/tus/lock.js'
import { uploadId } from '../../src/evidence/tus/record.js'
import { discard } from '../../src/evidence/tus/service.js'
import { openState } from '../../src/state/index.js'
import { createObjectStore, soleOwner, type ObjectStore } from '../../src/storage/index.js'
import { sharedInfra } from '../helpers/infra.js'
import { objectKeys, openUploads, s3Client, sha256Of } from '../helpers/s3.js'

// The tail of a resumable upload (its bytes past the last whole part) against
// the part store itself, on MinIO and on the fs store: two writers racing,
// and what is left once the upload is removed.

const MiB = 1024 * 1024
const PART = 5 * MiB
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')
const live = (): AbortSignal => new AbortController().signal

/** A writer of its own; every other writer is known and dead, so it takes any upload over at once. */
const owner = (id: string): LockOwner => ({ id, knows: () => true, isAlive: other => other === id })

async function setup (t: any, storage: 's3' | 'fs') {
  const dir = mkdtempSync(join(tmpdir(), 'tus-tail-'))
  let env: Record<string, string> = { DATA_DIR: dir }
  let s3: ReturnType<typeof s3Client> | undefined
  if (storage === 's3') {
    const infra = sharedInfra(t)
    if (!infra) return undefined
    env = { ...env, STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: `tail-${randomUUID()}`, S3_REGION: infra.AWS_REGION }
    s3 = s3Client(infra)
  }
  const config = loadConfig({ ...env, S3_PART_SIZE: String(PART), S3_QUEUE_SIZE: '2' })
  const state = openState(dir)
  const store: ObjectStore = createObjectStore(config, state, soleOwner())
  await store.start()
  const hashes = new HashPool(1)
  const states = new LocalUploadStates(state)
  t.teardown(async () => {
    await hashes.close()
    await store.stop?.()
    await state.close()
    rmSync(dir, { recursive: true, force: true })
  })
  const open = async (length: number): Promise<UploadRecord> => {
    const now = Date.now()
    const id = uploadId(now + 3_600_000, randomBytes(12))
    const key = `cam/uploads/${id}.mp4`
    const record: UploadRecord = {
      id, tenant: 'cam', length, offset: 0, part_size: PART, content_type: 'video/mp4',
      key, handle: await store.parts.open(key, 'video/mp4'), parts: [], created_at: now, expires_at: now + 3_600_000, state: 'open'
    }
    await states.create(record)
    return record
  }
  const write = async (record: UploadRecord, writer: LockOwner, bytes: Buffer): Promise<UploadRecord> => {
    const held = await HeldUpload.take(states, (await states.get(record.tenant, record.id))!, writer)
    try {
      return await append(held, Readable.from([bytes]), { parts: store.parts, slabs: store.slabs, hashes, queueSize: 2, gone: live(), stop: live() })
    } finally {
      await held.release()
    }
  }
  /** Everything the store holds for uploads: objects, tails, open multipart uploads, partial files. */
  const leftovers = async (): Promise<string[]> => {
    if (s3 !== undefined) return [...await objectKeys(s3, config.s3Bucket), ...(await openUploads(s3, config.s3Bucket)).map(k => `open: ${k}`)]
    const objects = join(dir, 'objects')
    return existsSync(objects) ? readdirSync(objects, { recursive: true, withFileTypes: true }).filter(e => e.isFile()).map(e => join(e.parentPath, e.name)) : []
  }
  const tails = async (record: UploadRecord): Promise<string[]> => (await leftovers()).filter(k => k.includes(s3 !== undefined ? `${record.key}.tails/` : `${record.handle}.tail-`))
  const content = async (uri: string): Promise<string> => s3 !== undefined ? await sha256Of(s3, uri) : sha(readFileSync(new URL(uri)))
  return { store, states, hashes, open, write, leftovers, tails, content }
}

for (const storage of ['s3', 'fs'] as const) {
  t.test(`${storage}: a tail is kept, read back into the part it begins and hashed once; a writer that lost the upload never overwrites the tail the record names; nothing is left after removal`, async t => {
    const s = await setup(t, storage)
    if (!s) return
    const file = randomBytes(2 * PART + 777)
    const record = await s.open(file.length)

    // A takes the upload; B takes it over (A's process is taken for gone) before A writes anything.
    const a = owner('writer-a')
    const zombie = await HeldUpload.take(s.states, (await s.states.get(record.tenant, record.id))!, a)
    const b = await s.write(record, owner('writer-b'), file.subarray(0, 2 * MiB))
    t.same([b.offset, b.parts.length, b.tail?.bytes], [2 * MiB, 0, 2 * MiB], 'B\'s 2 MiB, less than a part, are acknowledged as a tail')

    // A, unaware, writes its own bytes from the same offset: its tail gets a name of its own, and its record write fails.
    const stale = await append(zombie, Readable.from([randomBytes(MiB)]), { parts: s.store.parts, slabs: s.store.slabs, hashes: s.hashes, queueSize: 2, gone: live(), stop: live() })
      .then(() => undefined, (err: unknown) => err)
    t.equal((stale as GatewayError).code, 'upload_locked', 'the zombie\'s record write is refused')
    const after = (await s.states.get(record.tenant, record.id))!.record
    t.same([after.offset, after.tail], [2 * MiB, b.tail], 'the record still names B\'s tail')
    t.equal((await s.tails(record)).length, 2, 'the zombie\'s tail is left over beside B\'s, not over it')

    // The upload goes on from B's tail, in a body that starts and ends mid-part, then to the end.
    const c = await s.write(record, owner('writer-c'), file.subarray(2 * MiB, PART + 3 * MiB))
    t.same([c.offset, c.parts.length, c.tail?.bytes], [PART + 3 * MiB, 1, 3 * MiB], 'part 1 is B\'s tail and C\'s bytes; C\'s last 3 MiB are the new tail')
    const done = await s.write(record, owner('writer-c'), file.subarray(PART + 3 * MiB))
    t.same([done.state, done.offset, done.parts.length, done.tail], ['complete', file.length, 3, undefined])
    t.equal(done.sha256, sha(file), 'the hash went on across the tails: each byte hashed once')
    t.equal(await s.content(done.uri!), sha(file), 'the object is the file')
    t.equal((await s.tails(record)).length, 1, 'the tails the record moved past are removed; the zombie\'s waits for the upload\'s end')

    await discard(s.states, s.store, done)
    t.same(await s.leftovers(), [], 'removing the upload leaves nothing: no object, no tail, no open upload')
  })
}
