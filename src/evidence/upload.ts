import { PassThrough, type Readable } from 'node:stream'
import type { Logger } from 'pino'
import type { ObjectStore, StoredObject } from '../storage/index.js'
import type { HashPool } from './hasher.js'

/**
 * The objects one request has written. Each media part is piped into the
 * store and into a hashing worker at once; if anything fails, `discard`
 * removes what was stored, and an upload in progress is aborted through
 * `signal` (the client left, or the body failed: its reason is the error).
 */
export class UploadSession {
  private readonly stored: StoredObject[] = []

  constructor (private readonly store: ObjectStore, private readonly hashes: HashPool, private readonly signal: AbortSignal, private readonly log: Logger) {}

  async put (key: string, part: Readable, contentType: string): Promise<StoredObject & { sha256: string }> {
    const toStore = new PassThrough({ highWaterMark: 256 * 1024 })
    const hasher = this.hashes.stream()
    // pipe() does not carry errors to its destinations; a failed part must end both.
    // Their own 'error' events are observed through put() and digest, and must not
    // reach the process as unhandled.
    const fail = (err: Error): void => { toStore.destroy(err); hasher.destroy(err) }
    toStore.on('error', ignore)
    hasher.on('error', ignore)
    part.once('error', fail)
    const onAbort = (): void => fail(this.signal.reason instanceof Error ? this.signal.reason : new Error('request aborted'))
    this.signal.addEventListener('abort', onAbort, { once: true })
    part.pipe(toStore)
    part.pipe(hasher)
    try {
      const [object, sha256] = await Promise.all([this.store.put(key, toStore, contentType, this.signal), hasher.digest])
      this.stored.push(object)
      return { ...object, sha256 }
    } catch (err) {
      fail(err as Error)
      throw err
    } finally {
      this.signal.removeEventListener('abort', onAbort)
      part.off('error', fail)
    }
  }

  async discard (): Promise<void> {
    await Promise.all(this.stored.map(o => this.store.delete(o.key).catch(err => {
      this.log.error({ err, key: o.key }, 'could not remove an object of a failed request')
    })))
    this.stored.length = 0
  }
}

function ignore (): void {}
