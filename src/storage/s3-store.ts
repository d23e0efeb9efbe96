import { S3Client } from '@aws-sdk/client-s3'
import type { RootDatabase } from 'lmdb'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import { soleOwner, type ByteSource, type MultipartStats, type ObjectStore, type ProcessOwner, type PutOptions, type StoredObject } from './types.js'
import type { SlabPool } from './slabs.js'
import { withAbortRule } from './lifecycle.js'
import { MultipartSweeper } from './multipart-sweeper.js'
import { MultipartWriter } from './multipart-writer.js'
import { S3PartStore, type PartStore } from './part-store.js'
import { S3Api, isMissingBucket } from './s3-api.js'
import { UploadJournal } from './upload-journal.js'
import { writeObject } from './write-object.js'

/**
 * Any S3 API. Objects larger than one part go up as multipart uploads driven
 * here, part by part from the shared slab pool (lib-storage's Upload keeps
 * its own buffers per upload and copies them, which is what the pool exists
 * to avoid); smaller ones in one PutObject. Every multipart upload is
 * recorded in the state environment until it is completed or aborted, and
 * the sweep aborts what failures and crashes left.
 *
 * Payloads are sent unsigned and without the SDK's default CRC32: both would
 * run over every byte on the event loop, and the object's SHA-256 is already
 * computed in the hashing workers. Integrity in transit is TLS's job.
 */
export class S3ObjectStore implements ObjectStore {
  readonly kind = 's3'
  readonly client: S3Client
  readonly bucket: string
  readonly multipart: MultipartStats
  readonly parts: PartStore
  private readonly api: S3Api
  private readonly journal: UploadJournal
  private readonly sweeper: MultipartSweeper

  constructor (private readonly config: Config, readonly slabs: SlabPool, state: RootDatabase, owner: ProcessOwner = soleOwner(), private readonly log?: Logger) {
    this.bucket = config.s3Bucket
    this.client = new S3Client({
      region: config.s3Region,
      forcePathStyle: config.s3ForcePathStyle,
      requestChecksumCalculation: 'WHEN_REQUIRED',
      // The SDK's `Expect: 100-continue` on parts opens a connection per part
      // and, when the store stops answering, holds a cut-short part for its
      // own 6 s wait for the 100 before the deadline can take effect.
      expectContinueHeader: false,
      ...(config.s3Endpoint ? { endpoint: config.s3Endpoint } : {})
    })
    this.client.middlewareStack.add(next => async args => {
      const request = args.request as { headers?: Record<string, string>, body?: unknown }
      if (request.headers && request.body instanceof Uint8Array) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD'
      return next(args)
    }, { step: 'build', name: 'unsignedPayload' })
    this.api = new S3Api(this.client, this.bucket, { requestMs: config.s3RequestTimeoutMs, partMs: config.s3PartTimeoutMs })
    this.parts = new S3PartStore(this.api)
    this.journal = new UploadJournal(state, owner)
    this.sweeper = new MultipartSweeper(this.api, this.journal, config.s3SweepIntervalMs, log?.child({ component: 'multipart-sweep' }))
    const { journal, sweeper } = this
    this.multipart = {
      get inFlight () { return journal.inFlightCount },
      get backlog () { return sweeper.backlog },
      get abortsRetried () { return sweeper.abortsRetried },
      get unidentified () { return sweeper.unidentified }
    }
  }

  /**
   * Creates the bucket when missing, as a fresh MinIO has none; sets its
   * lifecycle rule for incomplete uploads; then sweeps what an earlier
   * process left.
   */
  async start (): Promise<void> {
    try {
      await this.api.headBucket()
    } catch (err) {
      if (!isMissingBucket(err)) throw err
      await this.api.createBucket()
    }
    if (this.config.s3AbortIncompleteUploadsDays > 0) await this.setAbortRule(this.config.s3AbortIncompleteUploadsDays)
    this.sweeper.start()
  }

  /**
   * Merges the rule aborting incomplete multipart uploads into the bucket's
   * lifecycle: the backstop for uploads whose id nobody recorded. Where the
   * credentials or the store refuse (403; MinIO answers 400 to the rule) the
   * start goes on with a warning: the sweep does not need it.
   */
  private async setAbortRule (days: number): Promise<void> {
    try {
      const lifecycle = await this.api.lifecycle()
      const rules = withAbortRule(lifecycle.rules, days)
      if (rules !== undefined) await this.api.putLifecycle({ ...lifecycle, rules })
      this.log?.info({ bucket: this.bucket, days, changed: rules !== undefined }, 'the bucket\'s lifecycle aborts incomplete multipart uploads')
    } catch (err) {
      this.log?.warn({ err, bucket: this.bucket, days }, 'could not set the bucket\'s lifecycle rule aborting incomplete multipart uploads; set one on the bucket (docs/storage.md)')
    }
  }

  async stop (): Promise<void> {
    await this.sweeper.stop()
    this.client.destroy()
  }

  async probe (): Promise<void> {
    await this.api.headBucket()
  }

  async put (key: string, body: ByteSource, contentType: string, options: PutOptions): Promise<StoredObject> {
    const writer = new MultipartWriter(this.api, this.journal, this.sweeper, key, contentType)
    const stored = await writeObject(body, writer, this.slabs, { ...options, queueSize: this.config.s3QueueSize })
    return { key, ...stored }
  }

  async delete (key: string): Promise<void> {
    await this.api.deleteObject(key)
  }

  async deletePrefix (prefix: string): Promise<number> {
    const keys = await this.api.listKeys(prefix)
    for (const key of keys) await this.api.deleteObject(key)
    return keys.length
  }
}
