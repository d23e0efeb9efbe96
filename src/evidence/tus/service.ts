import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { TokenVerifier } from '../../auth/index.js'
import type { Config } from '../../config/index.js'
import { GatewayError, toGatewayError } from '../../errors.js'
import type { Reply, RequestContext, Route } from '../../http/index.js'
import type { ObjectStore } from '../../storage/index.js'
import type { HashPool } from '../hasher.js'
import { MEDIA_TYPES } from '../published.js'
import { append } from './append.js'
import { HeldUpload, type LockOwner } from './lock.js'
import {
  CHECKSUM_ALGORITHMS, TUS_EXTENSIONS, TUS_VERSION, UPLOAD_ID, UPLOADS_PATH,
  checkOffsetContentType, checkResumable, httpDate, nonNegative, parseChecksum, parseMetadata
} from './protocol.js'
import { uploadId, type UploadRecord, type UploadStates, type Versioned } from './record.js'

const SCOPE = 'stream:write'
/** Seconds a client over its caps is told to wait: uploads end by completing, committing or expiring. */
const CAPS_RETRY_AFTER_S = '60'

const notFound = (id: string): GatewayError => new GatewayError('not_found', `no upload ${id}`, { details: { upload: 'no such upload (unknown, another client\'s, terminated or expired)' } })

/** Whether the record is past its Upload-Expires (or being removed for it). */
export function isExpired (record: UploadRecord, now: number): boolean {
  return record.state === 'expired' || (record.state !== 'committed' && record.expires_at <= now)
}

/**
 * tus 1.0.0 under `/v1/stream/uploads`: creation (with upload), HEAD, PATCH,
 * termination, expiration, checksum. The bytes go straight into the
 * object's parts (`append`); the upload's state is a record any process of
 * the service reads and writes (`UploadStates`), so no request needs the
 * node that took the one before. One PATCH writes an upload at a time
 * (`HeldUpload`, 423 for another meanwhile).
 */
export class TusRoutes {
  /** PATCHes (and creations with a body) running, by the controller that stops them. */
  private readonly running = new Set<AbortController>()

  constructor (
    private readonly config: Config,
    private readonly states: UploadStates,
    private readonly store: ObjectStore,
    private readonly hashes: HashPool,
    private readonly verifier: TokenVerifier,
    private readonly owner: LockOwner,
    private readonly log: Logger,
    /** Told when a body starts being stored and when it ends (the process's uploads in flight). */
    private readonly quiet: { busy(): void, idle(): void }
  ) {}

  routes (): Route[] {
    const at = `${UPLOADS_PATH}/{id}`
    return [
      { method: 'OPTIONS', path: UPLOADS_PATH, errors: 'evidence', handler: () => this.options() },
      { method: 'OPTIONS', path: at, errors: 'evidence', handler: () => this.options() },
      { method: 'POST', path: UPLOADS_PATH, body: 'stream', bodyLimit: this.config.evidenceMaxBytes, errors: 'evidence', handler: ctx => this.tus(() => this.create(ctx)) },
      { method: 'HEAD', path: at, errors: 'evidence', handler: ctx => this.head(ctx) },
      { method: 'PATCH', path: at, body: 'stream', bodyLimit: this.config.evidenceMaxBytes, errors: 'evidence', handler: ctx => this.tus(() => this.patch(ctx)) },
      { method: 'DELETE', path: at, errors: 'evidence', handler: ctx => this.tus(() => this.terminate(ctx)) }
    ]
  }

  /** Cuts the PATCHes still running short (shutdown); what they stored of whole parts stays. */
  stop (reason: GatewayError): void {
    for (const abort of this.running) abort.abort(reason)
  }

  private options (): Reply {
    return {
      status: 204,
      headers: {
        'tus-resumable': TUS_VERSION,
        'tus-version': TUS_VERSION,
        'tus-extension': TUS_EXTENSIONS,
        'tus-max-size': String(this.config.evidenceMaxBytes),
        'tus-checksum-algorithm': CHECKSUM_ALGORITHMS.join(',')
      }
    }
  }

  /** Every answer, an error too, says the version. */
  private async tus (work: () => Promise<Reply>): Promise<Reply> {
    try {
      const reply = await work()
      return { ...reply, headers: { ...reply.headers, 'tus-resumable': TUS_VERSION } }
    } catch (err) {
      const e = toGatewayError(err)
      throw new GatewayError(e.code, e.message, { details: e.details, headers: { ...e.headers, 'tus-resumable': TUS_VERSION }, cause: e.cause ?? err })
    }
  }

  /** A HEAD's answer has no body, an error's neither. */
  private async head (ctx: RequestContext): Promise<Reply> {
    try {
      const { record } = await this.find(ctx)
      return {
        status: 200,
        headers: {
          'tus-resumable': TUS_VERSION,
          'upload-offset': String(record.offset),
          'upload-length': String(record.length),
          'cache-control': 'no-store',
          ...(record.state === 'committed' ? {} : { 'upload-expires': httpDate(record.expires_at) }),
          ...(record.metadata !== undefined ? { 'upload-metadata': record.metadata } : {})
        }
      }
    } catch (err) {
      const e = toGatewayError(err)
      if (e.status >= 500) this.log.error({ err, reqId: ctx.requestId }, e.message)
      return { status: e.status, headers: { ...e.headers, 'tus-resumable': TUS_VERSION, 'cache-control': 'no-store' } }
    }
  }

  private async create (ctx: RequestContext): Promise<Reply> {
    const claims = await this.verifier.verify(ctx.headers['authorization'], SCOPE)
    const tenant = claims.tenantKey
    checkResumable(ctx.headers)
    if (ctx.headers['upload-defer-length'] !== undefined) {
      throw new GatewayError('validation_error', 'Upload-Defer-Length is not supported', { details: { 'Upload-Defer-Length': 'not supported: send Upload-Length (the size of the clip is known when its upload starts)' } })
    }
    const length = nonNegative('Upload-Length', ctx.headers['upload-length'])
    if (length === undefined) throw new GatewayError('validation_error', 'Upload-Length is required', { details: { 'Upload-Length': 'is required' } })
    if (length === 0) throw new GatewayError('validation_error', 'Upload-Length must be at least 1', { details: { 'Upload-Length': 'must be at least 1' } })
    if (length > this.config.evidenceMaxBytes) {
      throw new GatewayError('payload_too_large', `Upload-Length is over ${this.config.evidenceMaxBytes}`, { details: { 'Upload-Length': `must not exceed Tus-Max-Size ${this.config.evidenceMaxBytes}` } })
    }
    const metadata = parseMetadata(ctx.headers['upload-metadata'])
    const contentType = metadata.get('filetype') ?? metadata.get('content_type')
    const ext = contentType === undefined ? undefined : MEDIA_TYPES[contentType]
    if (ext === undefined) throw new GatewayError('validation_error', 'Upload-Metadata must name the media type', { details: { 'Upload-Metadata': 'filetype must be video/mp4 or video/h264' } })
    const withBody = ctx.hasBody
    if (withBody) checkOffsetContentType(ctx.headers['content-type'])
    const checksum = withBody ? parseChecksum(ctx.headers['upload-checksum']) : undefined
    if (withBody && (ctx.declaredLength ?? 0) > length) throw new GatewayError('payload_too_large', 'the body runs past Upload-Length', { details: { body: `runs past Upload-Length ${length}` } })
    await this.checkCaps(tenant, length)

    const now = Date.now()
    const expiresAt = now + this.config.evidenceUploadExpiresS * 1000
    const id = uploadId(expiresAt, randomBytes(12))
    const key = `${tenant}/uploads/${id}.${ext}`
    const handle = await this.store.parts.open(key, contentType!)
    const record: UploadRecord = {
      id, tenant, length, offset: 0, part_size: this.store.slabs.slabSize, content_type: contentType!,
      ...(ctx.headers['upload-metadata'] !== undefined ? { metadata: ctx.headers['upload-metadata'] } : {}),
      key, handle, parts: [], created_at: now, expires_at: expiresAt, state: 'open'
    }
    const version = await this.states.create(record)
    const location = `${UPLOADS_PATH}/${id}`
    const headers = { location, 'upload-expires': httpDate(record.expires_at) }
    if (!withBody) return { status: 201, headers }
    try {
      const written = await this.write(ctx, { record, version }, checksum)
      return { status: 201, headers: { ...headers, 'upload-offset': String(written.offset) } }
    } catch (err) {
      // The upload exists: the client resumes it at Location.
      const e = toGatewayError(err)
      throw new GatewayError(e.code, e.message, { details: e.details, headers: { ...e.headers, location }, cause: e.cause ?? err })
    }
  }

  private async patch (ctx: RequestContext): Promise<Reply> {
    const found = await this.find(ctx)
    checkOffsetContentType(ctx.headers['content-type'])
    const offset = nonNegative('Upload-Offset', ctx.headers['upload-offset'])
    if (offset === undefined) throw new GatewayError('validation_error', 'Upload-Offset is required', { details: { 'Upload-Offset': 'is required' } })
    const checksum = parseChecksum(ctx.headers['upload-checksum'])
    const { record } = found
    if (offset !== record.offset) {
      throw new GatewayError('upload_offset_mismatch', `Upload-Offset ${offset} is not the upload's offset ${record.offset}`, { details: { 'Upload-Offset': `must be ${record.offset}, the offset HEAD gives` }, headers: { 'upload-offset': String(record.offset) } })
    }
    if (offset + (ctx.declaredLength ?? 0) > record.length) throw new GatewayError('payload_too_large', 'the body runs past Upload-Length', { details: { body: `runs past Upload-Length ${record.length}` } })
    const written = record.offset === record.length ? record : await this.write(ctx, found, checksum)
    return { status: 204, headers: { 'upload-offset': String(written.offset), ...(written.state === 'committed' ? {} : { 'upload-expires': httpDate(written.expires_at) }) } }
  }

  /** The body of a PATCH (or of a creation) into the upload, holding it meanwhile. */
  private async write (ctx: RequestContext, found: Versioned, checksum: ReturnType<typeof parseChecksum>): Promise<UploadRecord> {
    const held = await HeldUpload.take(this.states, found, this.owner)
    const abort = new AbortController()
    const gone = new AbortController()
    ctx.onAbort(() => gone.abort(new Error('client disconnected')))
    this.running.add(abort)
    this.quiet.busy()
    try {
      return await append(held, ctx.stream!, { parts: this.store.parts, slabs: this.store.slabs, hashes: this.hashes, queueSize: this.config.s3QueueSize, gone: gone.signal, stop: abort.signal, checksum })
    } catch (err) {
      throw ctx.stream?.errored ?? err
    } finally {
      this.running.delete(abort)
      this.quiet.idle()
      await held.release()
    }
  }

  private async terminate (ctx: RequestContext): Promise<Reply> {
    const found = await this.find(ctx)
    if (found.record.state === 'committed') {
      throw new GatewayError('conflict', 'the upload belongs to an event', { details: { upload: 'is committed to an event and cannot be terminated' } })
    }
    const held = await HeldUpload.take(this.states, found, this.owner)
    try {
      await held.write({ ...held.record, state: 'expired' })
    } finally {
      await held.release()
    }
    await discard(this.states, this.store, held.record)
    return { status: 204 }
  }

  /** The caller's upload named by the path: 404 for anyone else's, or one expired or gone. */
  private async find (ctx: RequestContext): Promise<Versioned> {
    const claims = await this.verifier.verify(ctx.headers['authorization'], SCOPE)
    checkResumable(ctx.headers)
    const id = ctx.params['id'] ?? ''
    const found = UPLOAD_ID.test(id) ? await this.states.get(claims.tenantKey, id) : undefined
    if (found === undefined || isExpired(found.record, Date.now())) throw notFound(id)
    return found
  }

  /** EVIDENCE_UPLOAD_MAX_OPEN uploads, EVIDENCE_UPLOAD_MAX_BYTES_HELD bytes, per client: 429 past either. */
  private async checkCaps (tenant: string, length: number): Promise<void> {
    const now = Date.now()
    const open = (await this.states.list(tenant)).filter(v => v.record.state !== 'committed' && !isExpired(v.record, now))
    const held = open.reduce((n, v) => n + v.record.length, 0)
    const refuse = (message: string): GatewayError => new GatewayError('too_many_uploads', message, { details: { upload: `${message}: commit, terminate or let expire some first` }, headers: { 'retry-after': CAPS_RETRY_AFTER_S } })
    if (open.length >= this.config.evidenceUploadMaxOpen) throw refuse(`${open.length} uploads are open, the most a client may have`)
    if (held + length > this.config.evidenceUploadMaxBytesHeld) throw refuse(`${held} bytes are held in open uploads; ${length} more would pass ${this.config.evidenceUploadMaxBytesHeld}`)
  }
}

/**
 * Removes an upload the client ended or that expired: its parts or object,
 * every tail its writers kept (the record's and any a writer that lost the
 * upload left), then its record.
 */
export async function discard (states: UploadStates, store: ObjectStore, record: UploadRecord): Promise<void> {
  if (record.offset === record.length) await store.delete(record.key)
  else await store.parts.abort(record.key, record.handle)
  await store.parts.deleteTails(record.key, record.handle)
  await states.delete(record.tenant, record.id)
}
