import { randomBytes } from 'node:crypto'
import { access, mkdir, open, rename, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { S3Api } from './s3-api.js'

/**
 * An object written part by part across requests, processes and nodes (a
 * resumable upload): nothing of it is kept in memory between parts. Part `n`
 * (from 1) holds the bytes from `(n - 1) × partSize`. What `open` returns
 * names the object in progress and is all another process needs to add a
 * part, complete or abort it. Unlike `ObjectStore.put`, nothing here is in
 * the multipart journal: the object outlives the process that opened it, and
 * its owner (the upload's record) aborts it when it expires.
 */
export interface PartStore {
  open(key: string, contentType: string): Promise<string>
  /** Stores part `n`; its ETag (empty for fs). Sending a part again replaces it. */
  part(key: string, handle: string, n: number, partSize: number, bytes: Uint8Array, signal: AbortSignal): Promise<string>
  /** Joins the parts, in order, into the object `key`. */
  complete(key: string, handle: string, etags: readonly string[]): Promise<{ uri: string, etag: string }>
  /** Removes the object in progress; one already gone counts as removed. */
  abort(key: string, handle: string): Promise<void>
}

/** S3 multipart uploads, one per object: the handle is the upload id. */
export class S3PartStore implements PartStore {
  constructor (private readonly api: S3Api) {}

  open (key: string, contentType: string): Promise<string> {
    return this.api.createMultipart(key, contentType)
  }

  async part (key: string, handle: string, n: number, _partSize: number, bytes: Uint8Array, signal: AbortSignal): Promise<string> {
    return await this.api.uploadPart(key, handle, n, bytes, signal) ?? ''
  }

  async complete (key: string, handle: string, etags: readonly string[]): Promise<{ uri: string, etag: string }> {
    const etag = await this.api.completeMultipart(key, handle, etags.map((ETag, i) => ({ PartNumber: i + 1, ETag })))
    return { uri: `s3://${this.api.bucket}/${key}`, etag }
  }

  abort (key: string, handle: string): Promise<void> {
    return this.api.abortMultipart(key, handle)
  }
}

/**
 * A file in `objects/.resumable/` (the handle is its name), each part written
 * at its offset, renamed to the object's path when complete. The processes
 * sharing DATA_DIR share the folder, so any of them takes the next part.
 */
export class FsPartStore implements PartStore {
  private readonly folder: string

  constructor (private readonly root: string) {
    // Never a key's first folder: a tenant cannot start with a dot.
    this.folder = join(root, '.resumable')
  }

  async open (): Promise<string> {
    await mkdir(this.folder, { recursive: true, mode: 0o700 })
    const handle = randomBytes(12).toString('hex')
    await (await open(join(this.folder, handle), 'w', 0o600)).close()
    return handle
  }

  async part (_key: string, handle: string, n: number, partSize: number, bytes: Uint8Array): Promise<string> {
    const file = await open(join(this.folder, handle), 'r+')
    try {
      await file.write(bytes, 0, bytes.length, (n - 1) * partSize)
    } finally {
      await file.close()
    }
    return ''
  }

  async complete (key: string, handle: string): Promise<{ uri: string, etag: string }> {
    const path = join(this.root, key)
    await mkdir(dirname(path), { recursive: true, mode: 0o700 })
    try {
      await rename(join(this.folder, handle), path)
    } catch (err) {
      // Completed before, by a request whose answer was lost: the object is there.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || !await exists(path)) throw err
    }
    return { uri: `file://${path}`, etag: '' }
  }

  async abort (_key: string, handle: string): Promise<void> {
    await rm(join(this.folder, handle), { force: true })
  }
}

async function exists (path: string): Promise<boolean> {
  return await access(path).then(() => true, () => false)
}
