import {
  S3Client, HeadBucketCommand, CreateBucketCommand, DeleteObjectCommand, PutObjectCommand,
  CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand, AbortMultipartUploadCommand,
  type CompletedPart
} from '@aws-sdk/client-s3'
import type { Config } from '../config/index.js'
import type { ByteSource, ObjectStore, PutOptions, StoredObject } from './types.js'
import type { SlabPool } from './slabs.js'
import { writeObject, type ObjectWriter } from './write-object.js'

/**
 * Any S3 API. Objects larger than one part go up as multipart uploads driven
 * here, part by part from the shared slab pool (lib-storage's Upload keeps
 * its own buffers per upload and copies them, which is what the pool exists
 * to avoid); smaller ones in one PutObject.
 *
 * Payloads are sent unsigned and without the SDK's default CRC32: both would
 * run over every byte on the event loop, and the object's SHA-256 is already
 * computed in the hashing workers. Integrity in transit is TLS's job.
 */
export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3'
  readonly client: S3Client
  readonly bucket: string

  constructor (private readonly config: Config, readonly slabs: SlabPool) {
    this.bucket = config.s3Bucket
    this.client = new S3Client({
      region: config.s3Region,
      forcePathStyle: config.s3ForcePathStyle,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      ...(config.s3Endpoint ? { endpoint: config.s3Endpoint } : {})
    })
    this.client.middlewareStack.add(next => async args => {
      const request = args.request as { headers?: Record<string, string>, body?: unknown }
      if (request.headers && request.body instanceof Uint8Array) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD'
      return next(args)
    }, { step: 'build', name: 'unsignedPayload' })
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

  async put (key: string, body: ByteSource, contentType: string, options: PutOptions): Promise<StoredObject> {
    const writer = new MultipartWriter(this.client, this.bucket, key, contentType, options.signal)
    const stored = await writeObject(body, writer, this.slabs, { ...options, queueSize: this.config.s3QueueSize })
    return { key, ...stored }
  }

  async delete (key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }))
  }
}

/**
 * One object: the multipart upload is created with the first full part, so a
 * small object never opens one. Only part transfers are cut short by `signal`:
 * a create or complete cut short could take effect on the server unseen by
 * us, leaving an upload or object that `abort` does not know about.
 */
class MultipartWriter implements ObjectWriter {
  private uploadId: Promise<string> | undefined
  private readonly parts: CompletedPart[] = []
  private nextPart = 1

  constructor (
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly key: string,
    private readonly contentType: string,
    private readonly signal: AbortSignal
  ) {}

  async part (bytes: Uint8Array): Promise<void> {
    const PartNumber = this.nextPart++
    this.uploadId ??= this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: this.key, ContentType: this.contentType })).then(r => r.UploadId!)
    const UploadId = await this.uploadId
    const { ETag } = await this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key: this.key, UploadId, PartNumber, Body: bytes, ContentLength: bytes.length }), { abortSignal: this.signal })
    this.parts.push({ PartNumber, ETag })
  }

  async complete (rest: Uint8Array): Promise<{ uri: string, etag: string }> {
    const uri = `s3://${this.bucket}/${this.key}`
    if (!this.uploadId) {
      const { ETag } = await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key, Body: rest, ContentLength: rest.length, ContentType: this.contentType }))
      return { uri, etag: ETag ?? '' }
    }
    if (rest.length > 0) await this.part(rest)
    const parts = [...this.parts].sort((a, b) => a.PartNumber! - b.PartNumber!)
    const { ETag } = await this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: this.key, UploadId: await this.uploadId, MultipartUpload: { Parts: parts } }))
    return { uri, etag: ETag ?? '' }
  }

  /** Not tied to the request's signal: it must run after the client has gone. */
  async abort (): Promise<void> {
    const UploadId = await this.uploadId?.catch(() => undefined)
    if (UploadId) await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: this.key, UploadId }))
  }
}
