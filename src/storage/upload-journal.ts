import { randomUUID } from 'node:crypto'
import type { Database, RootDatabase } from 'lmdb'
import type { ProcessOwner } from './types.js'

export interface UploadEntry {
  bucket: string
  key: string
  /** Known once CreateMultipartUpload has answered. */
  upload_id?: string
  /** Epoch ms. */
  started_at: number
  /** The process that started it (its incarnation). */
  incarnation: string
}

/**
 * The multipart uploads this gateway has started and not yet seen completed
 * or aborted, kept in the state environment (LMDB) so that a crash, an
 * outage of the object store or a failed abort cannot leave one behind
 * unnoticed. An entry is committed before CreateMultipartUpload is sent: a
 * create whose answer is lost (a timeout, a crash) has still left its key
 * here, and the key is what its upload can be listed by.
 *
 * An entry is in flight while this process writes its object. The sweep
 * takes this process's entries that are not (a failed abort) and those of
 * processes that have ended; another live process on the same DATA_DIR (a
 * worker beside this one) sweeps its own.
 */
export class UploadJournal {
  readonly incarnation: string
  private readonly db: Database<UploadEntry, string>
  private readonly inFlight = new Set<string>()
  private readonly keysInFlight = new Map<string, number>()

  constructor (state: RootDatabase, private readonly owner: ProcessOwner) {
    this.incarnation = owner.id
    this.db = state.openDB<UploadEntry, string>({ name: 'storage-multipart-uploads' })
  }

  /** Records an upload about to be created and marks it in flight; resolves once committed. */
  async begin (bucket: string, key: string): Promise<{ id: string, entry: UploadEntry }> {
    const id = randomUUID()
    const entry = { bucket, key, started_at: Date.now(), incarnation: this.incarnation }
    this.hold(id, bucket, key)
    try {
      await this.db.put(id, entry)
    } catch (err) {
      this.letGo(id, bucket, key)
      throw err
    }
    return { id, entry }
  }

  /** Adds the upload id once known. Not awaited: without it the sweep still finds the upload by its key. */
  created (id: string, entry: UploadEntry, uploadId: string): void {
    this.db.put(id, { ...entry, upload_id: uploadId }).catch(() => undefined)
  }

  /** The object is complete: nothing is left to abort. */
  async completed (id: string, entry: UploadEntry): Promise<void> {
    await this.db.remove(id)
    this.letGo(id, entry.bucket, entry.key)
  }

  /** The object failed: its entry is no longer in flight and is the sweep's until removed. */
  released (id: string, entry: UploadEntry): void {
    this.letGo(id, entry.bucket, entry.key)
  }

  async remove (id: string): Promise<void> {
    await this.db.remove(id)
  }

  get (id: string): UploadEntry | undefined {
    return this.db.get(id)
  }

  /** Entries not in flight in this process and not another live process's: what the sweep aborts. */
  pending (): Array<{ id: string, entry: UploadEntry }> {
    const found: Array<{ id: string, entry: UploadEntry }> = []
    for (const { key, value } of this.db.getRange()) {
      if (this.inFlight.has(key)) continue
      if (value.incarnation !== this.owner.id && this.owner.isAlive(value.incarnation)) continue
      found.push({ id: key, entry: value })
    }
    return found
  }

  /** Whether this process is writing an object under that key now (a retry of the same event): its upload is not to be touched. */
  keyInFlight (bucket: string, key: string): boolean {
    return this.keysInFlight.has(`${bucket}\u0000${key}`)
  }

  get inFlightCount (): number {
    return this.inFlight.size
  }

  private hold (id: string, bucket: string, key: string): void {
    this.inFlight.add(id)
    const k = `${bucket}\u0000${key}`
    this.keysInFlight.set(k, (this.keysInFlight.get(k) ?? 0) + 1)
  }

  private letGo (id: string, bucket: string, key: string): void {
    if (!this.inFlight.delete(id)) return
    const k = `${bucket}\u0000${key}`
    const n = this.keysInFlight.get(k)! - 1
    if (n === 0) this.keysInFlight.delete(k)
    else this.keysInFlight.set(k, n)
  }
}
