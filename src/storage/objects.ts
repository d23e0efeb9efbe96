import { access, mkdir } from 'node:fs/promises'
import { constants } from 'node:fs'
import { join } from 'node:path'
import { S3Client, HeadBucketCommand, CreateBucketCommand } from '@aws-sdk/client-s3'
import type { Config } from '../config/index.js'

/** Where evidence objects live: a folder under DATA_DIR, or any S3 API. */
export interface ObjectStore {
  readonly kind: 'fs' | 's3'
  start(): Promise<void>
  probe(): Promise<void>
}

export class FsObjectStore implements ObjectStore {
  readonly kind = 'fs'
  readonly root: string

  constructor (dataDir: string) {
    this.root = join(dataDir, 'objects')
  }

  async start (): Promise<void> {
    await mkdir(this.root, { recursive: true })
  }

  async probe (): Promise<void> {
    await access(this.root, constants.W_OK)
  }
}

export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3'
  readonly client: S3Client
  readonly bucket: string

  constructor (config: Config) {
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
}

export function createObjectStore (config: Config): ObjectStore {
  return config.storage === 's3' ? new S3ObjectStore(config) : new FsObjectStore(config.dataDir)
}
