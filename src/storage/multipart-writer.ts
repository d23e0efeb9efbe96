import type { CompletedPart } from '@aws-sdk/client-s3'
import type { MultipartSweeper } from './multipart-sweeper.js'
import type { S3Api } from './s3-api.js'
import type { UploadJournal } from './upload-journal.js'
import type { ObjectWriter } from './write-object.js'

interface Upload { id: string, uploadId: string }

/**
 * One object: the multipart upload is created with the first full part, so a
 * small object never opens one; it is recorded in the journal before it is
 * created and until it is completed or aborted. Only transfers of bytes (the
 * parts, a small object's PutObject) are cut short by `signal`: a create or
 * complete that is cut short could still take effect on the server, so they
 * run to their deadline; the journal's upload id is what the sweep aborts.
 */
export class MultipartWriter implements ObjectWriter {
  private upload: Promise<Upload> | undefined
  /** The journal entry of the upload, once begun. */
  private recorded: string | undefined
  private readonly parts: CompletedPart[] = []
  private nextPart = 1
  /** A PutObject or CompleteMultipartUpload was sent: the object may exist even if it failed. */
  private objectMayExist = false

  constructor (
    private readonly api: S3Api,
    private readonly journal: UploadJournal,
    private readonly sweeper: MultipartSweeper,
    private readonly key: string,
    private readonly contentType: string
  ) {}

  async part (bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    const partNumber = this.nextPart++
    this.upload ??= this.create()
    const { uploadId } = await this.upload
    const ETag = await this.api.uploadPart(this.key, uploadId, partNumber, bytes, signal)
    this.parts.push({ PartNumber: partNumber, ETag })
  }

  async complete (rest: Uint8Array, signal: AbortSignal): Promise<{ uri: string, etag: string }> {
    const uri = `s3://${this.api.bucket}/${this.key}`
    this.objectMayExist = true
    if (!this.upload) return { uri, etag: await this.api.putObject(this.key, rest, this.contentType, signal) }
    if (rest.length > 0) await this.part(rest, signal)
    const { id, uploadId } = await this.upload
    const parts = [...this.parts].sort((a, b) => a.PartNumber! - b.PartNumber!)
    const etag = await this.api.completeMultipart(this.key, uploadId, parts)
    await this.journal.completed(id)
    return { uri, etag }
  }

  /**
   * Not tied to the request's signal: it must run after the client has gone.
   * A failed abort is left to the sweep, which retries it.
   */
  async abort (): Promise<void> {
    await this.upload?.catch(() => undefined)
    const failures: unknown[] = []
    if (this.recorded !== undefined) {
      this.journal.released(this.recorded)
      await this.sweeper.abort(this.recorded).catch(err => failures.push(err))
    }
    if (this.objectMayExist) await this.api.deleteObject(this.key).catch(err => failures.push(err))
    if (failures.length > 0) throw failures[0]
  }

  private async create (): Promise<Upload> {
    const { id, entry } = await this.journal.begin(this.api.bucket, this.key)
    this.recorded = id
    const uploadId = await this.api.createMultipart(this.key, this.contentType)
    try {
      await this.journal.created(id, entry, uploadId)
    } catch (err) {
      // Not recorded, so the sweep could not abort it: abort it now, from memory.
      await this.api.abortMultipart(this.key, uploadId).catch(() => undefined)
      throw err
    }
    return { id, uploadId }
  }
}
