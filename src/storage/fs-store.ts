import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { access, chmod, mkdir, open, readdir, rename, rm, rmdir, type FileHandle } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'
import { soleOwner, type ByteSource, type ObjectStore, type ProcessOwner, type PutOptions, type StoredObject } from './types.js'
import { FsPartStore, type PartStore } from './part-store.js'
import type { SlabPool } from './slabs.js'
import { writeObject, type ObjectWriter } from './write-object.js'

/**
 * Objects under DATA_DIR/objects/{key}. An object is written to a partial
 * file in `objects/.partial/` named after the writing process's incarnation,
 * and renamed to its key, creating its folders, only once complete. So a
 * failed or killed upload never leaves a folder behind, and the partial
 * files of a process that died are found at start without walking the tree.
 * Deleting an object removes the folders it leaves empty.
 */
export class FsObjectStore implements ObjectStore {
  readonly kind = 'fs'
  readonly root: string
  readonly parts: PartStore
  private readonly staging: string

  constructor (dataDir: string, readonly slabs: SlabPool, private readonly queueSize: number, private readonly owner: ProcessOwner = soleOwner()) {
    this.root = resolve(dataDir, 'objects')
    // Never a key's first folder: a tenant cannot start with a dot.
    this.staging = join(this.root, '.partial')
    this.parts = new FsPartStore(this.root)
  }

  /** Makes the folders, and removes the partial files of processes that are gone. */
  async start (): Promise<void> {
    await mkdir(this.staging, { recursive: true, mode: 0o700 })
    // Media written by versions before this one were 0644 in 0755 folders: the root closes them all.
    await chmod(this.root, 0o700)
    for (const name of await readdir(this.staging)) {
      if (!this.owner.isAlive(name.slice(0, name.indexOf('.')))) await rm(join(this.staging, name), { force: true })
    }
  }

  async probe (): Promise<void> {
    await access(this.root, constants.W_OK)
  }

  async put (key: string, body: ByteSource, _contentType: string, options: PutOptions): Promise<StoredObject> {
    const partial = join(this.staging, `${this.owner.id}.${randomBytes(6).toString('hex')}`)
    const stored = await writeObject(body, new FileWriter(partial, join(this.root, key)), this.slabs, { ...options, queueSize: this.queueSize })
    return { key, ...stored }
  }

  async delete (key: string): Promise<void> {
    const path = join(this.root, key)
    await rm(path, { force: true })
    await this.removeEmptyFolders(dirname(path))
  }

  /** Up from `dir` to the root (kept), each folder while it is empty. A folder another upload fills meanwhile stays. */
  private async removeEmptyFolders (dir: string): Promise<void> {
    for (let at = dir; at.startsWith(this.root + sep); at = dirname(at)) {
      try {
        await rmdir(at)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return
      }
    }
  }
}

/**
 * Each part written at its offset in the partial file; the file is renamed to
 * the object's path when complete. The file is opened at the first write, so
 * a write refused before it (a client past its uploads) leaves nothing.
 */
class FileWriter implements ObjectWriter {
  private file: Promise<FileHandle> | undefined
  private position = 0

  constructor (private readonly partial: string, private readonly path: string) {}

  async part (bytes: Uint8Array): Promise<void> {
    const at = this.position
    this.position += bytes.length
    await (await this.opened()).write(bytes, 0, bytes.length, at)
  }

  async complete (rest: Uint8Array): Promise<{ uri: string, etag: string }> {
    await this.part(rest)
    await (await this.opened()).close()
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 })
    await rename(this.partial, this.path)
    return { uri: `file://${this.path}`, etag: '' }
  }

  async abort (): Promise<void> {
    await this.file?.then(f => f.close(), () => undefined).catch(() => undefined)
    await rm(this.partial, { force: true })
  }

  private opened (): Promise<FileHandle> {
    if (this.file === undefined) {
      // Media are the tenants' own: no other user of the machine reads them, whatever the umask.
      this.file = open(this.partial, 'w', 0o600)
      this.file.catch(() => undefined)
    }
    return this.file
  }
}
