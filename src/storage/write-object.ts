import { chunkReader } from './chunk-reader.js'
import type { ByteSource, PutOptions } from './types.js'
import type { SlabPool } from './slabs.js'

/** Where an object's bytes go, part by part; what `ObjectStore.put` streams into. */
export interface ObjectWriter {
  /**
   * Stores the next full part. Called in order; up to `queueSize` run at once.
   * `signal` aborts when the write fails (the client left, another part failed).
   */
  part(bytes: Uint8Array, signal: AbortSignal): Promise<void>
  /** Stores what followed the last full part (possibly nothing) and finishes the object. */
  complete(rest: Uint8Array, signal: AbortSignal): Promise<{ uri: string, etag: string }>
  /** Leaves nothing behind (no partial file, no open multipart upload); safe after any failure. */
  abort(): Promise<void>
}

export interface WriteOptions extends PutOptions {
  /** Parts of this object being stored at once. */
  queueSize: number
}

const noObserver = async (): Promise<void> => {}

/**
 * Copies `body` into slabs of the shared pool and hands each full slab to the
 * writer and the observer at once. Reading waits whenever the pool (or the
 * tenant's share of it) is spent or `queueSize` parts are outstanding, which
 * is what pauses the client's socket. Any failure (the body, a part, the
 * observer, `signal`, a wait for a slab past its limit, an upload too slow
 * for the pool's minimum rate or holding a slab past its deadline) stops the reading,
 * even a read still waiting for the client, cuts the parts in flight short,
 * waits for them to settle and aborts the writer.
 */
export async function writeObject (body: ByteSource, writer: ObjectWriter, slabs: SlabPool, options: WriteOptions): Promise<{ uri: string, etag: string, size: number }> {
  const observe = options.observe ?? noObserver
  const lease = slabs.lease(options.tenant ?? '')
  const failed = new AbortController()
  const signal = AbortSignal.any([options.signal, failed.signal, lease.signal])
  const pending = new Set<Promise<void>>()
  const ship = (full: Uint8Array): void => {
    const done: Promise<void> = Promise.all([observe(full), writer.part(full, signal)])
      .then(() => undefined, (err: Error) => { failed.abort(err); throw err })
      .finally(() => { pending.delete(done); lease.release(full) })
    done.catch(() => undefined)
    pending.add(done)
  }

  const chunks = chunkReader(body, signal)
  let slab: Uint8Array | undefined
  let filled = 0
  let size = 0
  try {
    slab = await lease.acquire(signal)
    while (true) {
      const next = await chunks.next()
      if (next.done === true) break
      const chunk = next.value
      size += chunk.length
      for (let offset = 0; offset < chunk.length;) {
        const n = Math.min(chunk.length - offset, slab.length - filled)
        slab.set(chunk.subarray(offset, offset + n), filled)
        filled += n
        offset += n
        lease.filled(n)
        if (filled < slab.length) continue
        lease.stored()
        ship(slab)
        slab = undefined
        while (pending.size >= options.queueSize) await Promise.race(pending)
        slab = await lease.acquire(signal)
        filled = 0
      }
    }
    lease.stored()
    const rest = slab.subarray(0, filled)
    await observe(rest)
    await Promise.all(pending)
    return { ...await writer.complete(rest, signal), size }
  } catch (err) {
    failed.abort(err)
    await Promise.allSettled(pending)
    // The slabs go back before the store is told to clean up, which may take as long as the store does.
    if (slab) lease.release(slab)
    slab = undefined
    await writer.abort().catch((cleanup: Error) => options.onCleanupError?.(cleanup))
    // Ended for its pace: whatever the parts cut short rejected with, that is why.
    throw lease.signal.aborted ? lease.signal.reason : err
  } finally {
    chunks.close()
    if (slab) lease.release(slab)
    lease.close()
  }
}
