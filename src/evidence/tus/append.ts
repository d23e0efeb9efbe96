import { GatewayError } from '../../errors.js'
import type { ByteSource, PartStore, SlabPool } from '../../storage/index.js'
import type { HashPool } from '../hasher.js'
import type { HeldUpload } from './lock.js'
import type { ChecksumAlgorithm } from './protocol.js'
import type { UploadRecord } from './record.js'

export interface AppendOptions {
  parts: PartStore
  slabs: SlabPool
  hashes: HashPool
  /** Aborts the append: the client left, the hold was lost, shutdown. */
  signal: AbortSignal
  /** Upload-Checksum of the whole body: nothing is recorded unless it matches. */
  checksum?: { algorithm: ChecksumAlgorithm, hex: string } | undefined
}

/** The part a body chunk must not run past: more than the upload's length is 413. */
const tooLarge = (length: number): GatewayError =>
  new GatewayError('payload_too_large', `the body runs past Upload-Length (${length})`, { details: { body: `runs past Upload-Length ${length}` } })

/**
 * Streams a PATCH body into the upload's parts, one slab of the shared pool
 * at a time: each full part (or the last, shorter one) is stored and hashed
 * (the SHA-256 state carried on in a worker), then recorded, so a body cut
 * short keeps every whole part it delivered. Bytes after the last whole
 * part are not kept: the offset acknowledged is the end of that part, and
 * the client sends the rest again (tus lets a server take less than was
 * sent). With `checksum`, the parts are stored as they come but recorded
 * only once the body is whole and matches (460 otherwise): a part stored
 * and not recorded is replaced when it is sent again.
 * Returns the record as last written.
 */
export async function append (held: HeldUpload, body: ByteSource, options: AppendOptions): Promise<UploadRecord> {
  const start = held.record
  const { length, part_size: partSize } = start
  if (partSize !== options.slabs.slabSize) {
    // Parts are numbered by the size fixed at creation: a node with other slabs cannot write them.
    throw new GatewayError('internal_error', `the upload's parts are ${partSize} bytes and this process's S3_PART_SIZE is ${options.slabs.slabSize}: every node must share S3_PART_SIZE`)
  }
  const lease = options.slabs.lease(start.tenant)
  const signal = AbortSignal.any([options.signal, lease.signal, held.lost.signal])
  const check = options.checksum === undefined ? undefined : options.hashes.start(options.checksum.algorithm)
  let parts = [...start.parts]
  let state: Uint8Array | undefined = start.hash_state === undefined ? undefined : new Uint8Array(Buffer.from(start.hash_state, 'base64'))
  let stored = start.offset
  let digest: string | undefined
  let slab: Uint8Array | undefined
  let filled = 0
  const chunks = body[Symbol.asyncIterator]()
  // One listener for the whole body, not one per read (write-object.ts says why).
  let stopRead: ((reason: unknown) => void) | undefined
  const onAbort = (): void => stopRead?.(signal.reason)
  signal.addEventListener('abort', onAbort, { once: true })
  const nextChunk = (): Promise<IteratorResult<Uint8Array>> => signal.aborted
    ? Promise.reject(signal.reason)
    : new Promise((resolve, reject) => {
      stopRead = reject
      chunks.next().then(resolve, reject)
    })
  try {
    slab = await lease.acquire(signal)
    const partEnd = (): number => Math.min(stored + partSize, length)
    while (true) {
      const next = await nextChunk()
      stopRead = undefined
      if (next.done === true) break
      const chunk = next.value
      for (let at = 0; at < chunk.length;) {
        if (stored + filled === length) throw tooLarge(length)
        const n = Math.min(chunk.length - at, partEnd() - stored - filled)
        slab.set(chunk.subarray(at, at + n), filled)
        filled += n
        at += n
        lease.filled(n)
        if (stored + filled < partEnd()) continue
        const bytes = slab.subarray(0, filled)
        const final = stored + filled === length
        const [etag, hashed] = await Promise.all([
          options.parts.part(start.key, start.handle, stored / partSize + 1, partSize, bytes, signal),
          options.hashes.resume(state, bytes, final),
          check?.update(bytes)
        ])
        lease.stored()
        parts = [...parts, etag]
        state = hashed.state
        digest = hashed.digest
        stored += filled
        filled = 0
        if (check === undefined) await record(held, options.parts, { parts, state, stored, digest })
      }
    }
    if (check !== undefined) {
      await check.update(slab.subarray(0, filled))
      const got = await check.digest()
      if (got !== options.checksum!.hex) {
        throw new GatewayError('upload_checksum_mismatch', 'the body does not match Upload-Checksum; nothing was appended', { details: { 'Upload-Checksum': `${options.checksum!.algorithm} of the body does not match` } })
      }
      if (stored > start.offset) await record(held, options.parts, { parts, state, stored, digest })
    }
    return held.record
  } catch (err) {
    check?.abandon()
    throw err
  } finally {
    signal.removeEventListener('abort', onAbort)
    if (slab !== undefined) lease.release(slab)
    lease.close()
  }
}

/** Writes what was stored into the record; the object is completed first when the last part is in. */
async function record (held: HeldUpload, store: PartStore, done: { parts: string[], state: Uint8Array | undefined, stored: number, digest: string | undefined }): Promise<void> {
  const current = held.record
  const next: UploadRecord = { ...current, parts: done.parts, offset: done.stored, hash_state: done.state === undefined ? undefined : Buffer.from(done.state).toString('base64') }
  if (done.stored === current.length) {
    const object = await store.complete(current.key, current.handle, done.parts)
    Object.assign(next, { state: 'complete', sha256: done.digest, uri: object.uri, etag: object.etag })
  }
  await held.write(next)
}
