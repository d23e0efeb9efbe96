import { randomBytes } from 'node:crypto'
import { constants, createWriteStream } from 'node:fs'
import { access, mkdir, rename, rm } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { pipeline } from 'node:stream/promises'
import type { Readable } from 'node:stream'
import { S3Client, HeadBucketCommand, CreateBucketCommand, DeleteObjectCommand } from '@aws-sdk/client-s3'
import { Upload } from '@aws-sdk/lib-storage'
import type { Config } from '../config/index.js'

export interface StoredObject {
  key: string
  uri: string
  /** The backend's ETag; empty where the backend has none (fs). */
  etag: string
  size: number
}

/** Where evidence objects live: a folder under DATA_DIR, or any S3 API. */
export interface ObjectStore {
  readonly kind: 'fs' | 's3'
  start(): Promise<void>
  probe(): Promise<void>
  /**
   * Streams `body` into the object `key`. On any failure (the body errors,
   * `signal` aborts, the backend fails) nothing is left behind: no partial
   * file, no open multipart upload.
   */
  put(key: string, body: Readable, contentType: string, signal: AbortSignal): Promise<StoredObject>
  delete(key: string): Promise<void>
}

export class FsObjectStore implements ObjectStore {
  readonly kind = 'fs'
  readonly root: string

  constructor (dataDir: string) {
    this.root = resolve(dataDir, 'objects')
  }

  async start (): Promise<void> {
    await mkdir(this.root, { recursive: true })
  }

  async probe (): Promise<void> {
    await access(this.root, constants.W_OK)
  }

  /** Written beside the target under a temporary name, renamed when complete. */
  async put (key: string, body: Readable, _contentType: string, signal: AbortSignal): Promise<StoredObject> {
    const path = join(this.root, key)
    const partial = `${path}.partial-${randomBytes(6).toString('hex')}`
    await mkdir(dirname(path), { recursive: true })
    let size = 0
    body.on('data', (chunk: Buffer) => { size += chunk.length })
    try {
      await pipeline(body, createWriteStream(partial), { signal })
      await rename(partial, path)
    } catch (err) {
      await rm(partial, { force: true })
      throw err
    }
    return { key, uri: `file://${path}`, etag: '', size }
  }

  async delete (key: string): Promise<void> {
    await rm(join(this.root, key), { force: true })
  }
}

export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3'
  readonly client: S3Client
  readonly bucket: string

  constructor (private readonly config: Config) {
    this.bucket = config.s3Bucket
    this.client = new S3Client({
      region: config.s3Region,
      forcePathStyle: config.s3ForcePathStyle,
      ...(config.s3Endpoint ? { endpoint: config.s3Endpoint } : {})
    })
  }

  /** Creates the bucket when missing, as a fresh MinIO has none. */
  async start (): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }))
    } catch (err) {
      if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 404) throw err
      await this.client.send(new CreateBucketCommand({ Bucket: this.bucket }))
    }
  }

  async probe (): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }))
  }

  /**
   * lib-storage's Upload: parts of S3_PART_SIZE, S3_QUEUE_SIZE in flight, so
   * memory per upload is bounded by partSize × (queueSize + 1) whatever the
   * object size; small objects go up in one PutObject. It aborts the
   * multipart upload itself on failure (leavePartsOnError: false); abort()
   * covers a client that went away.
   */
  async put (key: string, body: Readable, contentType: string, signal: AbortSignal): Promise<StoredObject> {
    let size = 0
    body.on('data', (chunk: Buffer) => { size += chunk.length })
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: body, ContentType: contentType },
      partSize: this.config.s3PartSize,
      queueSize: this.config.s3QueueSize,
      leavePartsOnError: false
    })
    const onAbort = (): void => { upload.abort().catch(() => undefined) }
    signal.addEventListener('abort', onAbort, { once: true })
    body.once('error', onAbort)
    try {
      const done = await upload.done()
      return { key, uri: `s3://${this.bucket}/${key}`, etag: done.ETag ?? '', size }
    } finally {
      signal.removeEventListener('abort', onAbort)
      body.off('error', onAbort)
    }
  }

  async delete (key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }))
  }
}

export function createObjectStore (config: Config): ObjectStore {
  return config.storage === 's3' ? new S3ObjectStore(config) : new FsObjectStore(config.dataDir)
}
