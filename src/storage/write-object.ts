import type { ByteSource, PutOptions } from './types.js'
import type { SlabPool } from './slabs.js'

/** Where an object's bytes go, part by part; what `ObjectStore.put` streams into. */
export interface ObjectWriter {
  /** Stores the next full part. Called in order; up to `queueSize` run at once. */
  part(bytes: Uint8Array): Promise<void>
  /** Stores what followed the last full part (possibly nothing) and finishes the object. */
  complete(rest: Uint8Array): Promise<{ uri: string, etag: string }>
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
 * writer and the observer at once. Reading waits whenever the pool is spent or
 * `queueSize` parts are outstanding, which is what pauses the client's socket.
 * Any failure (the body, a part, the observer, `signal`) stops the reading,
 * even a read still waiting for the client, waits for the parts in flight to
 * settle and aborts the writer.
 */
export async function writeObject (body: ByteSource, writer: ObjectWriter, slabs: SlabPool, options: WriteOptions): Promise<{ uri: string, etag: string, size: number }> {
  const observe = options.observe ?? noObserver
  const failed = new AbortController()
  const signal = AbortSignal.any([options.signal, failed.signal])
  let stop: (reason: unknown) => void = () => {}
  const stopped = new Promise<never>((_resolve, reject) => { stop = reject })
  stopped.catch(() => undefined)
  const onAbort = (): void => stop(signal.reason)
  signal.addEventListener('abort', onAbort, { once: true })
  const pending = new Set<Promise<void>>()
  const ship = (full: Uint8Array): void => {
    const done: Promise<void> = Promise.all([observe(full), writer.part(full)])
      .then(() => undefined, (err: Error) => { failed.abort(err); throw err })
      .finally(() => { pending.delete(done); slabs.release(full) })
    done.catch(() => undefined)
    pending.add(done)
  }

  const chunks = body[Symbol.asyncIterator]()
  let slab: Uint8Array | undefined
  let filled = 0
  let size = 0
  try {
    slab = await slabs.acquire(signal)
    while (true) {
      const next = await Promise.race([chunks.next(), stopped])
      if (next.done === true) break
      const chunk = next.value
      size += chunk.length
      for (let offset = 0; offset < chunk.length;) {
        const n = Math.min(chunk.length - offset, slab.length - filled)
        slab.set(chunk.subarray(offset, offset + n), filled)
        filled += n
        offset += n
        if (filled < slab.length) continue
        ship(slab)
        slab = undefined
        while (pending.size >= options.queueSize) await Promise.race(pending)
        slab = await slabs.acquire(signal)
        filled = 0
      }
    }
    const rest = slab.subarray(0, filled)
    await observe(rest)
    await Promise.all(pending)
    return { ...await writer.complete(rest), size }
  } catch (err) {
    failed.abort(err)
    await Promise.allSettled(pending)
    await writer.abort().catch((cleanup: Error) => options.onCleanupError?.(cleanup))
    throw err
  } finally {
    signal.removeEventListener('abort', onAbort)
    if (slab) slabs.release(slab)
  }
}
