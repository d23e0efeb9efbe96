import { randomBytes } from 'node:crypto'
import { access, mkdir, open, readdir, rename, rm, writeFile } from 'node:fs/promises'
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
 *
 * The bytes past an object's last whole part (a tail, shorter than a part)
 * are kept apart, under a name of their own: each write of a tail takes a
 * new name, so a writer that lost the object to another never overwrites
 * the tail the other kept. Which tail counts is the owner's to say; the
 * others are removed with `deleteTails` when the object is done with.
 */
export interface PartStore {
  open(key: string, contentType: string): Promise<string>
  /** Stores part `n`; its ETag (empty for fs). Sending a part again replaces it. */
  part(key: string, handle: string, n: number, partSize: number, bytes: Uint8Array, signal: AbortSignal): Promise<string>
  /** Joins the parts, in order, into the object `key`. */
  complete(key: string, handle: string, etags: readonly string[]): Promise<{ uri: string, etag: string }>
  /** Removes the object in progress; one already gone counts as removed. */
  abort(key: string, handle: string): Promise<void>
  /** Keeps `bytes`, the object's bytes from `start` (the end of its whole parts), under a new name; that name. */
  putTail(key: string, handle: string, start: number, bytes: Uint8Array, signal: AbortSignal): Promise<string>
  /** Reads the tail `name` into `into`; its length. */
  readTail(name: string, into: Uint8Array, signal: AbortSignal): Promise<number>
  /** Removes one tail; one already gone counts as removed. */
  deleteTail(name: string): Promise<void>
  /** Removes every tail ever kept for the object. */
  deleteTails(key: string, handle: string): Promise<void>
}

/** A tail's unique part of its name: its start, so a listing reads in order, and random bits, so no two writes share one. */
const tailSuffix = (start: number): string => `${start.toString().padStart(10, '0')}-${randomBytes(8).toString('hex')}`

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

  /** An object of its own, `{key}.tails/{start}-{random}`: parts of a multipart upload cannot be read back. */
  async putTail (key: string, _handle: string, start: number, bytes: Uint8Array, signal: AbortSignal): Promise<string> {
    const name = `${tailsOf(key)}${tailSuffix(start)}`
    await this.api.putObject(name, bytes, 'application/octet-stream', signal)
    return name
  }

  readTail (name: string, into: Uint8Array, signal: AbortSignal): Promise<number> {
    return this.api.getObjectInto(name, into, signal)
  }

  deleteTail (name: string): Promise<void> {
    return this.api.deleteObject(name)
  }

  async deleteTails (key: string): Promise<void> {
    for (const name of await this.api.listKeys(tailsOf(key))) await this.api.deleteObject(name)
  }
}

const tailsOf = (key: string): string => `${key}.tails/`

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

  /** A file beside the parts' file, `{handle}.tail-{start}-{random}`. */
  async putTail (_key: string, handle: string, start: number, bytes: Uint8Array): Promise<string> {
    const name = `${handle}.tail-${tailSuffix(start)}`
    await writeFile(join(this.folder, name), bytes, { flag: 'wx', mode: 0o600 })
    return name
  }

  async readTail (name: string, into: Uint8Array): Promise<number> {
    const file = await open(join(this.folder, name), 'r')
    try {
      const { size } = await file.stat()
      if (size > into.length) throw new Error(`the tail ${name} is longer than ${into.length} bytes`)
      const { bytesRead } = await file.read(into, 0, size, 0)
      return bytesRead
    } finally {
      await file.close()
    }
  }

  async deleteTail (name: string): Promise<void> {
    await rm(join(this.folder, name), { force: true })
  }

  async deleteTails (_key: string, handle: string): Promise<void> {
    const names = await readdir(this.folder).catch(() => [] as string[])
    for (const name of names) if (name.startsWith(`${handle}.tail-`)) await rm(join(this.folder, name), { force: true })
  }
}

async function exists (path: string): Promise<boolean> {
  return await access(path).then(() => true, () => false)
}
