import type { Readable } from 'node:stream'
import {
  S3Client, HeadBucketCommand, CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, PutObjectCommand,
  CreateMultipartUploadCommand, UploadPartCommand, CompleteMultipartUploadCommand, AbortMultipartUploadCommand,
  ListObjectsV2Command, GetBucketLifecycleConfigurationCommand, PutBucketLifecycleConfigurationCommand,
  type CompletedPart, type LifecycleRule, type TransitionDefaultMinimumObjectSize
} from '@aws-sdk/client-s3'
import { GatewayError } from '../errors.js'

/** Seconds a client is told to wait after the object store failed it. */
const RETRY_AFTER_S = '5'

export interface Lifecycle {
  rules: LifecycleRule[]
  transitionDefaultMinimumObjectSize: TransitionDefaultMinimumObjectSize | undefined
}

export interface S3Timeouts {
  /** Every request but a part's, retries included. */
  requestMs: number
  /** One part (or a small object's PutObject), retries included. */
  partMs: number
}

/**
 * The S3 requests the store makes, on one bucket, each with a deadline: a
 * frozen or unreachable object store fails an upload with `storage_unavailable`
 * (503, Retry-After) when the deadline passes, rather than holding its slabs
 * and its client for as long as the store stays away. The deadline covers the
 * SDK's own retries (it does not retry an aborted request).
 *
 * `signal`, where given, cuts a request short for the caller's reason (the
 * client left, another part failed, shutdown): the call rejects with that reason.
 */
export class S3Api {
  constructor (readonly client: S3Client, readonly bucket: string, private readonly timeouts: S3Timeouts) {}

  async headBucket (): Promise<void> {
    await this.call('HeadBucket', this.timeouts.requestMs, s => this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: s }))
  }

  async createBucket (): Promise<void> {
    await this.call('CreateBucket', this.timeouts.requestMs, s => this.client.send(new CreateBucketCommand({ Bucket: this.bucket }), { abortSignal: s }))
  }

  async createMultipart (key: string, contentType: string): Promise<string> {
    const { UploadId } = await this.call('CreateMultipartUpload', this.timeouts.requestMs, s =>
      this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: contentType }), { abortSignal: s }))
    return UploadId!
  }

  async uploadPart (key: string, uploadId: string, partNumber: number, bytes: Uint8Array, signal: AbortSignal): Promise<string | undefined> {
    const { ETag } = await this.call('UploadPart', this.timeouts.partMs, s =>
      this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: bytes, ContentLength: bytes.length }), { abortSignal: s }), signal)
    return ETag
  }

  async completeMultipart (key: string, uploadId: string, parts: CompletedPart[]): Promise<string> {
    const { ETag } = await this.call('CompleteMultipartUpload', this.timeouts.requestMs, s =>
      this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }), { abortSignal: s }))
    return ETag ?? ''
  }

  /** An upload that is already gone (aborted or completed) counts as aborted. */
  async abortMultipart (key: string, uploadId: string): Promise<void> {
    try {
      await this.call('AbortMultipartUpload', this.timeouts.requestMs, s =>
        this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }), { abortSignal: s }))
    } catch (err) {
      if (!isNoSuchUpload(err)) throw err
    }
  }

  /**
   * The bucket's lifecycle configuration: its rules (none when it has no
   * configuration) and the setting that goes with them, to be written back
   * as it was.
   */
  async lifecycle (): Promise<Lifecycle> {
    try {
      const out = await this.call('GetBucketLifecycleConfiguration', this.timeouts.requestMs, s =>
        this.client.send(new GetBucketLifecycleConfigurationCommand({ Bucket: this.bucket }), { abortSignal: s }))
      return { rules: out.Rules ?? [], transitionDefaultMinimumObjectSize: out.TransitionDefaultMinimumObjectSize }
    } catch (err) {
      if ((err as { name?: string }).name === 'NoSuchLifecycleConfiguration') return { rules: [], transitionDefaultMinimumObjectSize: undefined }
      throw err
    }
  }

  /** Replaces the bucket's lifecycle configuration: give it every rule to keep. */
  async putLifecycle ({ rules, transitionDefaultMinimumObjectSize }: Lifecycle): Promise<void> {
    await this.call('PutBucketLifecycleConfiguration', this.timeouts.requestMs, s =>
      this.client.send(new PutBucketLifecycleConfigurationCommand({
        Bucket: this.bucket,
        LifecycleConfiguration: { Rules: rules },
        ...(transitionDefaultMinimumObjectSize !== undefined ? { TransitionDefaultMinimumObjectSize: transitionDefaultMinimumObjectSize } : {})
      }), { abortSignal: s }))
  }

  async putObject (key: string, bytes: Uint8Array, contentType: string, signal: AbortSignal): Promise<string> {
    const { ETag } = await this.call('PutObject', this.timeouts.partMs, s =>
      this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentLength: bytes.length, ContentType: contentType }), { abortSignal: s }), signal)
    return ETag ?? ''
  }

  /**
   * Reads the object `key` into `into` (a slab: nothing else is allocated for
   * it), with the deadline of a part; its length. An object longer than
   * `into` fails.
   */
  async getObjectInto (key: string, into: Uint8Array, signal: AbortSignal): Promise<number> {
    return await this.call('GetObject', this.timeouts.partMs, async s => {
      const { Body } = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: s })
      const body = Body as Readable
      // The request's signal ends the request, not a body already flowing.
      const stop = (): void => { body.destroy(s.reason as Error) }
      s.addEventListener('abort', stop, { once: true })
      try {
        let n = 0
        for await (const chunk of body as AsyncIterable<Uint8Array>) {
          if (n + chunk.length > into.length) throw new Error(`${key} is longer than ${into.length} bytes`)
          into.set(chunk, n)
          n += chunk.length
        }
        return n
      } finally {
        s.removeEventListener('abort', stop)
        body.destroy()
      }
    }, signal)
  }

  /** The keys of the objects under `prefix`. */
  async listKeys (prefix: string): Promise<string[]> {
    const keys: string[] = []
    let token: string | undefined
    do {
      const page = await this.call('ListObjectsV2', this.timeouts.requestMs, s =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }), { abortSignal: s }))
      for (const o of page.Contents ?? []) keys.push(o.Key!)
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return keys
  }

  async deleteObject (key: string): Promise<void> {
    await this.call('DeleteObject', this.timeouts.requestMs, s => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: s }))
  }

  private async call<T> (what: string, timeoutMs: number, send: (signal: AbortSignal) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const deadline = AbortSignal.timeout(timeoutMs)
    try {
      return await send(signal ? AbortSignal.any([signal, deadline]) : deadline)
    } catch (err) {
      if (signal?.aborted === true) throw signal.reason
      if (deadline.aborted) throw unavailable(`${what} did not answer within ${timeoutMs} ms`, `storage did not answer within ${timeoutMs} ms`, err)
      // No status: the store was not reached (refused, reset, DNS). 5xx: it failed. Both pass.
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
      if (status === undefined || status >= 500) throw unavailable(`${what} failed`, 'storage failed', err)
      throw err
    }
  }
}

/** A 404 to a request about an upload: it no longer exists. */
function isNoSuchUpload (err: unknown): boolean {
  const e = err as { name?: string, $metadata?: { httpStatusCode?: number } }
  return e.name === 'NoSuchUpload' || e.$metadata?.httpStatusCode === 404
}

function unavailable (message: string, detail: string, cause: unknown): GatewayError {
  return new GatewayError('storage_unavailable', message, { details: { media: `${detail}; retry later` }, headers: { 'retry-after': RETRY_AFTER_S }, cause })
}

/** The store's 404 to HeadBucket: the bucket does not exist yet. */
export function isMissingBucket (err: unknown): boolean {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404
}
