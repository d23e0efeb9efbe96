import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { access, mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import type { ByteSource, ObjectStore, PutOptions, StoredObject } from './types.js'
import type { SlabPool } from './slabs.js'
import { writeObject, type ObjectWriter } from './write-object.js'

export class FsObjectStore implements ObjectStore {
  readonly kind = 'fs'
  readonly root: string

  constructor (dataDir: string, readonly slabs: SlabPool, private readonly queueSize: number) {
    this.root = resolve(dataDir, 'objects')
  }

  async start (): Promise<void> {
    await mkdir(this.root, { recursive: true })
  }

  async probe (): Promise<void> {
    await access(this.root, constants.W_OK)
  }

  async put (key: string, body: ByteSource, _contentType: string, options: PutOptions): Promise<StoredObject> {
    const path = join(this.root, key)
    await mkdir(dirname(path), { recursive: true })
    const stored = await writeObject(body, new FileWriter(path), this.slabs, { ...options, queueSize: this.queueSize })
    return { key, ...stored }
  }

  async delete (key: string): Promise<void> {
    await rm(join(this.root, key), { force: true })
  }
}

/** Written beside the target under a temporary name, each part at its offset, renamed when complete. */
class FileWriter implements ObjectWriter {
  private readonly partial: string
  private readonly file: Promise<FileHandle>
  private position = 0

  constructor (private readonly path: string) {
    this.partial = `${path}.partial-${randomBytes(6).toString('hex')}`
    this.file = open(this.partial, 'w')
    this.file.catch(() => undefined)
  }

  async part (bytes: Uint8Array): Promise<void> {
    const at = this.position
    this.position += bytes.length
    await (await this.file).write(bytes, 0, bytes.length, at)
  }

  async complete (rest: Uint8Array): Promise<{ uri: string, etag: string }> {
    await this.part(rest)
    await (await this.file).close()
    await rename(this.partial, this.path)
    return { uri: `file://${this.path}`, etag: '' }
  }

  async abort (): Promise<void> {
    await this.file.then(f => f.close(), () => undefined).catch(() => undefined)
    await rm(this.partial, { force: true })
  }
}
