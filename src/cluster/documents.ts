import {
  S3Client, CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand,
  ListObjectsV2Command, PutObjectCommand
} from '@aws-sdk/client-s3'
import type { Config } from '../config/index.js'
import { GatewayError } from '../errors.js'

/**
 * Where the documents every node shares live, in the evidence bucket. Tenant
 * prefixes are storage identifiers, which start with a letter or digit, so
 * none can reach it; it holds the signing keys' private halves and must be
 * readable by the gateway's credentials only (docs/scaling.md, The bucket).
 */
export const SHARED_PREFIX = '_gateway/'

export interface Versioned<T> {
  value: T
  /** The store's version of the document (its ETag), for a conditional replace. */
  etag: string
}

export interface Listed {
  /** Relative to SHARED_PREFIX, as given to the other methods. */
  key: string
  etag: string
  /** Epoch ms, on the store's clock. */
  lastModified: number
}

/** Seconds a caller is told to wait after the store failed. */
const RETRY_AFTER_S = '5'

/**
 * Small JSON documents under `_gateway/` in S3, written with conditions so
 * that nodes agree without talking to each other: `create` succeeds for the
 * first writer only (`If-None-Match: *`), `replace` only for a writer that
 * read the current version (`If-Match`). Deletes are unconditional (MinIO
 * ignores `If-Match` on DeleteObject), so only documents a single writer owns,
 * or that nobody needs any more, are ever deleted.
 *
 * Every request has the S3_REQUEST_TIMEOUT_MS deadline; a store that is away
 * is 503 `storage_unavailable` with `Retry-After`.
 */
export class SharedDocuments {
  readonly bucket: string
  private readonly client: S3Client
  private readonly timeoutMs: number

  constructor (config: Config) {
    this.bucket = config.s3Bucket
    this.timeoutMs = config.s3RequestTimeoutMs
    this.client = new S3Client({
      region: config.s3Region,
      forcePathStyle: config.s3ForcePathStyle,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      ...(config.s3Endpoint ? { endpoint: config.s3Endpoint } : {})
    })
  }

  /** Creates the bucket when it is missing (a fresh MinIO has none); several nodes may race to. */
  async start (): Promise<void> {
    try {
      await this.call('HeadBucket', s => this.client.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal: s }))
    } catch (err) {
      if (status(err) !== 404) throw err
      try {
        await this.call('CreateBucket', s => this.client.send(new CreateBucketCommand({ Bucket: this.bucket }), { abortSignal: s }))
      } catch (err) {
        if (status(err) !== 409) throw err
      }
    }
  }

  stop (): void {
    this.client.destroy()
  }

  async get<T> (key: string): Promise<Versioned<T> | undefined> {
    try {
      const res = await this.call('GetObject', s => this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: SHARED_PREFIX + key }), { abortSignal: s }))
      const text = await res.Body!.transformToString()
      return { value: JSON.parse(text) as T, etag: res.ETag! }
    } catch (err) {
      if (status(err) === 404) return undefined
      throw err
    }
  }

  /** Writes `value` unless the document exists; its version, or undefined when another writer was first. */
  create (key: string, value: unknown): Promise<string | undefined> {
    return this.conditional(key, value, { IfNoneMatch: '*' })
  }

  /** Writes `value` if the document is still at `etag`; its new version, or undefined when it changed (or is gone). */
  replace (key: string, value: unknown, etag: string): Promise<string | undefined> {
    return this.conditional(key, value, { IfMatch: etag })
  }

  /** Writes `value` whatever is there: for documents one writer owns (a heartbeat). */
  async put (key: string, value: unknown): Promise<string> {
    return (await this.conditional(key, value, {}))!
  }

  async delete (key: string): Promise<void> {
    await this.call('DeleteObject', s => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: SHARED_PREFIX + key }), { abortSignal: s }))
  }

  /**
   * How long ago the document was last written, in ms, or undefined when it
   * does not exist. Both ends come from the store's clock (the object's
   * Last-Modified and the answer's Date), so the clocks of the nodes do not
   * enter it; both have a resolution of one second.
   */
  async age (key: string): Promise<number | undefined> {
    const command = new HeadObjectCommand({ Bucket: this.bucket, Key: SHARED_PREFIX + key })
    const date = responseDate(command)
    try {
      const head = await this.call('HeadObject', s => this.client.send(command, { abortSignal: s }))
      return Math.max(0, (date() ?? Date.now()) - head.LastModified!.getTime())
    } catch (err) {
      if (status(err) === 404) return undefined
      throw err
    }
  }

  /** Every document under `prefix`, in key order. */
  async list (prefix: string): Promise<Listed[]> {
    const out: Listed[] = []
    let token: string | undefined
    do {
      const page = await this.call('ListObjectsV2', s => this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: SHARED_PREFIX + prefix, ContinuationToken: token }), { abortSignal: s }))
      for (const o of page.Contents ?? []) out.push({ key: o.Key!.slice(SHARED_PREFIX.length), etag: o.ETag!, lastModified: o.LastModified!.getTime() })
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return out
  }

  /**
   * `list`, with the store's clock when it answered (the first page's `Date`,
   * epoch ms, to the second): what the documents' `lastModified` compare
   * with, so that no node's own clock enters a decision taken on their age.
   */
  async listAt (prefix: string): Promise<{ listed: Listed[], now: number }> {
    const listed: Listed[] = []
    let now: number | undefined
    let token: string | undefined
    do {
      const command = new ListObjectsV2Command({ Bucket: this.bucket, Prefix: SHARED_PREFIX + prefix, ContinuationToken: token })
      const date = responseDate(command)
      const page = await this.call('ListObjectsV2', s => this.client.send(command, { abortSignal: s }))
      now ??= date()
      for (const o of page.Contents ?? []) listed.push({ key: o.Key!.slice(SHARED_PREFIX.length), etag: o.ETag!, lastModified: o.LastModified!.getTime() })
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return { listed, now: now ?? Date.now() }
  }

  private async conditional (key: string, value: unknown, condition: { IfNoneMatch?: string, IfMatch?: string }): Promise<string | undefined> {
    const body = Buffer.from(JSON.stringify(value))
    try {
      const res = await this.call('PutObject', s => this.client.send(new PutObjectCommand({
        Bucket: this.bucket, Key: SHARED_PREFIX + key, Body: body, ContentLength: body.length, ContentType: 'application/json', ...condition
      }), { abortSignal: s }))
      return res.ETag!
    } catch (err) {
      // 412: the condition failed. 409: AWS S3's answer to a conditional
      // write racing another on the same key. 404: If-Match on a key that is gone.
      const code = status(err)
      if (code === 412 || code === 409 || (code === 404 && condition.IfMatch !== undefined)) return undefined
      throw err
    }
  }

  private async call<T> (what: string, send: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const deadline = AbortSignal.timeout(this.timeoutMs)
    try {
      return await send(deadline)
    } catch (err) {
      if (deadline.aborted) throw unavailable(`${what} on the shared state did not answer within ${this.timeoutMs} ms`, err)
      // No status: the store was not reached (refused, reset, DNS). 5xx: it failed.
      const code = status(err)
      if (code === undefined || code >= 500) throw unavailable(`${what} on the shared state failed`, err)
      throw err
    }
  }
}

/**
 * The `Date` of the answer to `command`, once it has been sent: the store's
 * clock. Undefined when the store sent none (HTTP requires one of a server
 * with a clock), and the caller falls back to its own.
 */
function responseDate (command: ListObjectsV2Command | HeadObjectCommand): () => number | undefined {
  let date: string | undefined
  // Both commands take the same middleware; TypeScript cannot call a union of their stacks.
  const stack = (command as ListObjectsV2Command).middlewareStack
  stack.add(next => async args => {
    const out = await next(args)
    date = (out.response as { headers?: Record<string, string> }).headers?.['date']
    return out
  }, { step: 'deserialize', name: 'responseDate' })
  return () => date === undefined ? undefined : Date.parse(date)
}

function status (err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
}

function unavailable (message: string, cause: unknown): GatewayError {
  return new GatewayError('storage_unavailable', message, { headers: { 'retry-after': RETRY_AFTER_S }, cause })
}
