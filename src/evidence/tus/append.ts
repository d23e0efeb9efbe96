import { GatewayError } from '../../errors.js'
import { chunkReader, type ByteSource, type PartStore, type SlabPool } from '../../storage/index.js'
import type { HashPool } from '../hasher.js'
import type { HeldUpload } from './lock.js'
import type { ChecksumAlgorithm } from './protocol.js'
import type { UploadRecord } from './record.js'

export interface AppendOptions {
  parts: PartStore
  slabs: SlabPool
  hashes: HashPool
  /** Parts of the body being stored at once (S3_QUEUE_SIZE). */
  queueSize: number
  /** The client left: reading stops, and the whole parts it delivered are still stored and recorded. */
  gone: AbortSignal
  /** Everything stops, parts in flight too (shutdown). */
  stop: AbortSignal
  /** Upload-Checksum of the whole body: nothing is recorded unless it matches. */
  checksum?: { algorithm: ChecksumAlgorithm, hex: string } | undefined
}

const tooLarge = (length: number): GatewayError =>
  new GatewayError('payload_too_large', `the body runs past Upload-Length (${length})`, { details: { body: `runs past Upload-Length ${length}` } })

type Tail = UploadRecord['tail']

interface Progress { parts: string[], state: Uint8Array | undefined, stored: number, digest: string | undefined, tail: Tail }

/**
 * Streams a PATCH body into the upload's parts through slabs of the shared
 * pool: each full part (or the last, shorter one) is stored while the next
 * is read (up to `queueSize` at once), hashed in order (the SHA-256 state
 * carried on in a worker), and recorded in order, so a body cut short keeps
 * every whole part it delivered. The bytes past the last whole part (the
 * tail) are kept too, as a tail of the part store, and the next body starts
 * with them in its first slab: the part they begin goes up whole, and its
 * tail's bytes, hashed when kept, are not hashed again. With `checksum`,
 * the parts are stored as they come but nothing is recorded unless the body
 * is whole and matches (460 otherwise): a part stored and not recorded is
 * replaced when it is sent again. Returns the record as last written.
 */
export async function append (held: HeldUpload, body: ByteSource, options: AppendOptions): Promise<UploadRecord> {
  const start = held.record
  const { length, part_size: partSize } = start
  if (partSize !== options.slabs.slabSize) {
    // Parts are numbered by the size fixed at creation: a node with other slabs cannot write them.
    throw new GatewayError('internal_error', `the upload's parts are ${partSize} bytes and this process's S3_PART_SIZE is ${options.slabs.slabSize}: every node must share S3_PART_SIZE`)
  }
  const lease = options.slabs.lease(start.tenant)
  const failed = new AbortController()
  /** What cuts the storing of parts short. */
  const stopped = AbortSignal.any([options.stop, lease.signal, held.lost.signal, failed.signal])
  /** What ends the reading: that, or the client gone. */
  const reading = AbortSignal.any([stopped, options.gone])
  const check = options.checksum === undefined ? undefined : options.hashes.start(options.checksum.algorithm)
  const initial = start.hash_state === undefined ? undefined : new Uint8Array(Buffer.from(start.hash_state, 'base64'))
  let progress: Progress = { parts: [...start.parts], state: initial, stored: start.offset, digest: undefined, tail: start.tail }
  /** The hash of the parts shipped so far, in order. */
  let hashed: Promise<{ state: Uint8Array | undefined, digest: string | undefined }> = Promise.resolve({ state: initial, digest: undefined })
  /** The progress recorded (or, with a checksum, held back) after the parts shipped so far, in order. */
  let recorded: Promise<void> = Promise.resolve()
  const pending = new Set<Promise<void>>()

  /** Stores part `n` (`bytes`, ending at `end`), hashing and checking only its bytes from `fresh`: those before are the tail's, hashed already. */
  const ship = (slab: Uint8Array, bytes: Uint8Array, n: number, end: number, fresh: number): void => {
    const final = end === length
    const hash = hashed.then(h => options.hashes.resume(h.state, bytes.subarray(fresh), final))
    hashed = hash
    const work = Promise.all([options.parts.part(start.key, start.handle, n, partSize, bytes, stopped), hash, check?.update(bytes.subarray(fresh))])
      .finally(() => lease.release(slab))
    const step = Promise.all([recorded, work]).then(async ([, [etag, h]]) => {
      const parts = [...progress.parts]
      parts[n - 1] = etag
      progress = { parts, state: h.state, stored: end, digest: h.digest, tail: undefined }
      if (check === undefined) await record(held, options.parts, progress)
    })
    recorded = step
    const done = step.then(() => undefined, (err: Error) => { failed.abort(err); throw err }).finally(() => { pending.delete(done) })
    done.catch(() => undefined)
    pending.add(done)
  }

  const chunks = chunkReader(body, reading)
  let slab: Uint8Array | undefined
  /** Where the slab's bytes start in the upload, how many it holds, and how many of those the record holds already (the tail's). */
  let from = start.offset - (start.tail?.bytes ?? 0)
  let filled = 0
  let fresh = 0
  let cut: unknown
  try {
    try {
      slab = await lease.acquire(reading)
      if (start.tail !== undefined) {
        const read = await options.parts.readTail(start.tail.name, slab.subarray(0, partSize - 1), reading)
        if (read !== start.tail.bytes) throw new GatewayError('internal_error', `the upload's tail ${start.tail.name} holds ${read} bytes, not the ${start.tail.bytes} recorded`)
        filled = fresh = read
        lease.filled(read)
      }
      while (true) {
        const next = await chunks.next()
        if (next.done === true) break
        const chunk = next.value
        for (let at = 0; at < chunk.length;) {
          if (slab === undefined || from + filled === length) throw tooLarge(length)
          const end = Math.min(from + partSize, length)
          const n = Math.min(chunk.length - at, end - from - filled)
          slab.set(chunk.subarray(at, at + n), filled)
          filled += n
          at += n
          lease.filled(n)
          if (from + filled < end) continue
          lease.stored()
          ship(slab, slab.subarray(0, filled), from / partSize + 1, end, fresh)
          slab = undefined
          from = end
          filled = fresh = 0
          while (pending.size >= options.queueSize) await Promise.race(pending)
          if (from < length) slab = await lease.acquire(reading)
        }
      }
    } catch (err) {
      // A client gone keeps what it delivered whole; anything else stops the parts too.
      if (!options.gone.aborted || stopped.aborted) throw err
      cut = err
    }
    await Promise.all(pending)
    lease.stored()
    const rest = slab !== undefined && filled > fresh ? slab.subarray(fresh, filled) : new Uint8Array(0)
    if (check !== undefined) {
      // A cut body cannot be checked: nothing of it is kept.
      if (cut !== undefined) throw cut
      await check.update(rest)
      const got = await check.digest()
      if (got !== options.checksum!.hex) {
        throw new GatewayError('upload_checksum_mismatch', 'the body does not match Upload-Checksum; nothing was appended', { details: { 'Upload-Checksum': `${options.checksum!.algorithm} of the body does not match` } })
      }
    }
    if (rest.length > 0) {
      const [h, name] = await Promise.all([
        options.hashes.resume(progress.state, rest, false),
        options.parts.putTail(start.key, start.handle, from, slab!.subarray(0, filled), stopped)
      ])
      progress = { ...progress, state: h.state, stored: from + filled, tail: { name, bytes: filled } }
    }
    if (progress.stored > held.record.offset) await record(held, options.parts, progress)
    if (cut !== undefined) throw cut
    return held.record
  } catch (err) {
    failed.abort(err)
    check?.abandon()
    await Promise.allSettled(pending)
    throw err
  } finally {
    chunks.close()
    if (slab !== undefined) lease.release(slab)
    lease.close()
    // Only a tail the record moved past is removed: a write that failed may still have landed, and its tail is then the record's.
    if (start.tail !== undefined && held.record.tail?.name !== start.tail.name) await options.parts.deleteTail(start.tail.name).catch(() => undefined)
  }
}

/** Writes what was stored into the record; the object is completed first when the last part is in. */
async function record (held: HeldUpload, store: PartStore, done: Progress): Promise<void> {
  const { tail: _before, ...current } = held.record
  const next: UploadRecord = {
    ...current,
    parts: done.parts,
    offset: done.stored,
    hash_state: done.state === undefined ? undefined : Buffer.from(done.state).toString('base64'),
    ...(done.tail !== undefined ? { tail: done.tail } : {})
  }
  if (done.stored === current.length) {
    const object = await store.complete(current.key, current.handle, done.parts)
    Object.assign(next, { state: 'complete', sha256: done.digest, uri: object.uri, etag: object.etag })
  }
  await held.write(next)
}
