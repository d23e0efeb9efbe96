import type { Logger } from 'pino'
import type { ByteSource, ObjectStore, StoredObject } from '../storage/index.js'
import type { HashPool } from './hasher.js'

/**
 * The objects one request has written. Each media part is stored and hashed
 * at once (the hash sees each slab as it is stored); if anything fails,
 * `discard` removes what was stored, and an upload in progress is aborted
 * through `signal` (the client left, or the body failed: its reason is the error).
 */
export class UploadSession {
  private readonly stored: StoredObject[] = []

  constructor (private readonly store: ObjectStore, private readonly hashes: HashPool, private readonly signal: AbortSignal, private readonly log: Logger) {}

  async put (key: string, part: ByteSource, contentType: string): Promise<StoredObject & { sha256: string }> {
    const hash = this.hashes.start()
    try {
      const object = await this.store.put(key, part, contentType, {
        signal: this.signal,
        observe: bytes => hash.update(bytes),
        onCleanupError: err => this.log.error({ err, key }, 'could not abort the upload of a failed media part; parts may be left in storage')
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
