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
 * unnoticed. An entry is committed before CreateMultipartUpload is sent and
 * its upload id added once the create answers, before any part is sent: the
 * sweep aborts by that id alone. A create whose answer is lost (a timeout, a
 * crash) leaves an entry without one, which the sweep counts and drops.
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

  constructor (state: RootDatabase, private readonly owner: ProcessOwner) {
    this.incarnation = owner.id
    this.db = state.openDB<UploadEntry, string>({ name: 'storage-multipart-uploads' })
  }

  /** Records an upload about to be created and marks it in flight; resolves once committed. */
  async begin (bucket: string, key: string): Promise<{ id: string, entry: UploadEntry }> {
    const id = randomUUID()
    const entry = { bucket, key, started_at: Date.now(), incarnation: this.incarnation }
    this.inFlight.add(id)
    try {
      await this.db.put(id, entry)
    } catch (err) {
      this.inFlight.delete(id)
      throw err
    }
    return { id, entry }
  }

  /** Adds the upload id once known: the sweep aborts by id alone. Resolves once committed. */
  async created (id: string, entry: UploadEntry, uploadId: string): Promise<void> {
    await this.db.put(id, { ...entry, upload_id: uploadId })
  }

  /** The object is complete: nothing is left to abort. */
  async completed (id: string): Promise<void> {
    await this.db.remove(id)
    this.inFlight.delete(id)
  }

  /** The object failed: its entry is no longer in flight and is the sweep's until removed. */
  released (id: string): void {
    this.inFlight.delete(id)
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

  get inFlightCount (): number {
    return this.inFlight.size
  }


}
