import type { Logger } from 'pino'
import type { ByteSource, ObjectStore, StoredObject } from '../storage/index.js'
import type { HashPool } from './hasher.js'

/**
 * The objects one request has written. Each media part is stored and hashed
 * at once (the hash sees each slab as it is stored); if anything fails,
 * `discard` removes what was stored, and an upload in progress is aborted
 * through `signal` (the client left, the body failed, the server is shutting
 * down: its reason is the error). The parts count against `tenant`'s share
 * of the storage buffers.
 */
export class UploadSession {
  private readonly stored: StoredObject[] = []

  constructor (
    private readonly store: ObjectStore,
    private readonly hashes: HashPool,
    private readonly signal: AbortSignal,
    private readonly log: Logger,
    private readonly tenant: string
  ) {}

  async put (key: string, part: ByteSource, contentType: string): Promise<StoredObject & { sha256: string }> {
    const hash = this.hashes.start()
    try {
      const object = await this.store.put(key, part, contentType, {
        signal: this.signal,
        tenant: this.tenant,
        observe: bytes => hash.update(bytes),
        onCleanupError: err => this.log.warn({ err, key }, 'could not clean up after a failed media part (an S3 multipart upload stays recorded and the sweep retries its abort)')
      })
      this.stored.push(object)
      return { ...object, sha256: await hash.digest() }
    } catch (err) {
      hash.abandon()
      throw err
    }
  }

  async discard (): Promise<void> {
    await Promise.all(this.stored.map(o => this.store.delete(o.key).catch(err => {
      this.log.error({ err, key: o.key }, 'could not remove an object of a failed request')
    })))
    this.stored.length = 0
  }
}

/** Settles as `work` does, or rejects with the signal's reason once it aborts (a read the client stalls). */
export function unlessAborted<T> (work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
