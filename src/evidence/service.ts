import type { Logger } from 'pino'
import { Counter, Gauge, type Registry } from 'prom-client'
import type { TokenClaims, TokenVerifier } from '../auth/index.js'
import type { Config } from '../config/index.js'
import { type Reply, type RequestContext, type Route } from '../http/index.js'
import { GatewayError } from '../errors.js'
import { storageMetrics, type ByteSource, type ObjectStore } from '../storage/index.js'
import { eventTypeAllowlist, parseEnvelope, publishingClientId, type EventEnvelope } from './envelope.js'
import { HashPool } from './hasher.js'
import { claimKey as idempotencyKey, type Acknowledgment } from './claims.js'
import type { EvidenceLedger } from './ledger.js'
import { MultipartReader, multipartBoundary, readSmallPart } from './multipart.js'
import { MEDIA_TYPES, objectFolder, objectKey, publishedMessage, type StoredMedia } from './published.js'
import { UploadSession, unlessAborted } from './upload.js'
import type { LockOwner } from './tus/lock.js'
import type { UploadStates } from './tus/record.js'
import { ResumableUploads, type UploadHint } from './tus/uploads.js'

export const EVIDENCE_SCOPE = 'stream:write'
export const ENVELOPE_MAX_BYTES = 64 * 1024
/**
 * Longest wait of a 202 for the relay to have the envelope on the bus; past
 * it (a broker that is slow but not failing) the answer goes out with the
 * envelope safe in the outbox, as during an outage.
 */
export const PUBLISH_WAIT_MS = 10_000

const invalid = (key: string, message: string): GatewayError =>
  new GatewayError('validation_error', message, { details: { [key]: message } })

const replay = (ack: Acknowledgment): Reply => ({ status: 202, body: ack, headers: { 'idempotent-replay': 'true' } })

const inProgress = (eventId: string): GatewayError =>
  new GatewayError('idempotency_in_progress', 'this event_id is still being processed', { details: { event_id: `${eventId} is being processed by another request` } })

/** What hears of the uploads' bursts: busy at each upload, idle once none is in flight. */
export interface Quiet {
  busy(): void
  idle(): void
}

/**
 * `POST /v1/stream/events`: the envelope is checked before any byte is
 * stored, media parts stream into the object store while being hashed, and
 * the envelope that references them is accepted in the ledger (with the
 * event_id's claim) before the 202: `LocalLedger` on one node,
 * `SharedLedger` in a cluster.
 */
export class EvidenceService {
  private readonly hashes: HashPool
  private readonly allowlist: ReadonlySet<string>
  /** Requests being served, by the controller that aborts their upload. */
  private readonly running = new Map<AbortController, Promise<unknown>>()
  /** Bodies being stored, multipart and resumable: `quiet` hears when none is left. */
  private storing = 0
  private readonly accepted: Counter
  private readonly acceptedBytes: Counter
  /** tus, when the process has a place for the uploads' records. */
  private readonly uploads: ResumableUploads | undefined

  constructor (
    private readonly config: Config,
    /** Where event_ids are claimed and accepted envelopes wait for the bus. */
    private readonly ledger: EvidenceLedger,
    private readonly store: ObjectStore,
    private readonly verifier: TokenVerifier,
    private readonly log: Logger,
    registry: Registry,
    /** Told when uploads start and when none is left in flight (the process's `IdleCollector`). */
    private readonly quiet: Quiet = { busy () {}, idle () {} },
    /** Where resumable uploads are recorded, and the process that writes them. */
    resumable?: { states: UploadStates, owner: LockOwner }
  ) {
    this.hashes = new HashPool(config.evidenceHashThreads)
    this.allowlist = eventTypeAllowlist(config.evidenceEventTypes)
    new Gauge({ name: 'gateway_evidence_outbox_backlog', help: 'Envelopes accepted but not yet acknowledged by the bus', aggregator: 'max', registers: [registry], collect () { this.set(ledger.backlog) } })
    new Gauge({ name: 'gateway_evidence_outbox_oldest_age_seconds', help: 'Age of the oldest unpublished envelope', aggregator: 'max', registers: [registry], collect () { this.set(ledger.oldestAgeMs() / 1000) } })
    storageMetrics(store, registry)
    this.accepted = new Counter({ name: 'gateway_evidence_uploads_total', help: 'Uploads accepted (202), idempotent replays not counted', registers: [registry] })
    this.acceptedBytes = new Counter({ name: 'gateway_evidence_media_bytes_total', help: 'Bytes of media in accepted uploads', registers: [registry] })
    this.uploads = resumable === undefined ? undefined : new ResumableUploads(config, resumable.states, store, this.hashes, verifier, resumable.owner, log.child({ component: 'resumable-uploads' }), { busy: () => this.busy(), idle: () => this.idle() })
  }

  start (): void {
    this.ledger.start()
    this.uploads?.start()
  }

  /** Removes expired resumable uploads now (it runs every S3_SWEEP_INTERVAL_MS anyway); how many. */
  sweepUploads (now?: number): Promise<number> {
    return this.uploads?.sweep(now) ?? Promise.resolve(0)
  }

  /**
   * Called once the shutdown deadline has passed: uploads still running are
   * cut short and answered 503 `shutting_down`, with their objects removed
   * and their event_ids released, so a retry after the restart is accepted.
   */
  async stop (): Promise<void> {
    const shutdown = new GatewayError('shutting_down', 'server is shutting down')
    for (const abort of this.running.keys()) abort.abort(shutdown)
    await this.uploads?.stop(shutdown)
    await Promise.allSettled(this.running.values())
    await this.ledger.stop()
    await this.hashes.close()
  }

  /** Readiness detail: the outbox backlog, and the last publish error if the relay is failing. */
  outboxState (): Record<string, unknown> {
    return { backlog: this.ledger.backlog, oldest_age_ms: this.ledger.oldestAgeMs(), ...(this.ledger.lastError ? { last_error: this.ledger.lastError } : {}) }
  }

  routes (): Route[] {
    return [
      { method: 'POST', path: '/v1/stream/events', body: 'stream', bodyLimit: this.config.evidenceMaxBytes, errors: 'evidence', handler: ctx => this.serve(ctx) },
      ...this.uploads?.routes() ?? []
    ]
  }

  private serve (ctx: RequestContext): Promise<Reply> {
    const abort = new AbortController()
    this.busy()
    const served = this.ingest(ctx, abort)
    this.running.set(abort, served)
    served.catch(() => undefined).finally(() => {
      this.running.delete(abort)
      this.idle()
    })
    return served
  }

  private busy (): void {
    this.storing++
    this.quiet.busy()
  }

  private idle (): void {
    if (--this.storing === 0) this.quiet.idle()
  }

  private async ingest (ctx: RequestContext, abort: AbortController): Promise<Reply> {
    const claims = await this.verifier.verify(ctx.headers['authorization'], EVIDENCE_SCOPE)
    // Objects and idempotency keys live in the (issuer, client_id) namespace.
    const tenant = claims.tenantKey
    const receivedAt = new Date()
    const body = ctx.stream!
    if (this.uploads !== undefined && isJson(ctx.headers['content-type'])) return await this.commit(ctx, claims, this.uploads, receivedAt)
    ctx.onAbort(() => abort.abort(new Error('client disconnected')))
    const session = new UploadSession(this.store, this.hashes, abort.signal, this.log, tenant)
    const media: StoredMedia[] = []
    let envelope: EventEnvelope | undefined
    let clientId = claims.client_id
    let claimKey: string | undefined
    let attempt: string | undefined
    let lost: AbortSignal | undefined
    try {
      const parts = new MultipartReader(body, multipartBoundary(ctx.headers['content-type'] ?? ''), this.config.evidenceMaxMedia + 1)
      const nextPart = (): Promise<Awaited<ReturnType<typeof parts.nextPart>>> => unlessAborted(parts.nextPart(), abort.signal)
      for (let part = await nextPart(); part !== null; part = await nextPart()) {
        if (!envelope) {
          if (part.name !== 'envelope') throw invalid('envelope', 'must be the first part')
          // Untyped is read as JSON too: it is what `curl -F envelope=…` sends without `;type=`.
          if (part.typed && part.contentType !== 'application/json') throw invalid('envelope', 'must be application/json')
          envelope = parseEnvelope(await unlessAborted(readSmallPart(parts, ENVELOPE_MAX_BYTES, 'envelope'), abort.signal), this.allowlist)
          clientId = publishingClientId(envelope, claims.client_id, claims.scope)
          const byReference = envelope.media?.findIndex(h => h.upload_url !== undefined) ?? -1
          if (byReference >= 0) throw invalid(`media[${byReference}].upload_url`, 'names an upload: send the envelope alone as application/json to commit uploads')
          const key = idempotencyKey(tenant, envelope.event_id)
          const eventId = envelope.event_id
          const claim = await this.ledger.claim(key, attempt => objectFolder(tenant, eventId, receivedAt, attempt))
          if (claim.kind === 'replay') return replay(claim.ack)
          if (claim.kind === 'in_progress') throw inProgress(envelope.event_id)
          claimKey = key
          attempt = claim.attempt
          lost = claim.lost
          // A claim taken over (this process was quiet past its lease) stops the upload: its objects are its own, and go.
          lost.addEventListener('abort', () => abort.abort(lost!.reason), { once: true })
          continue
        }
        if (part.name === 'envelope') throw invalid(`parts[${part.index}]`, 'a second envelope part')
        if (part.name !== 'media') throw invalid(`parts[${part.index}]`, `unknown part name ${JSON.stringify(part.name)}`)
        media.push(await this.storeMedia(session, parts, part.contentType, media.length, envelope, tenant, receivedAt, attempt))
      }
      if (!envelope) throw invalid('envelope', 'is required')
      const hints = envelope.media?.length ?? 0
      if (hints > media.length) throw invalid('media', `${hints} media hints but ${media.length} media parts`)
      const ack: Acknowledgment = { status: 'accepted', event_id: envelope.event_id, media_count: media.length }
      const message = publishedMessage(envelope, media, { clientId, issuer: claims.iss, tenant, requestId: ctx.requestId, receivedAt, playbackBaseUrl: this.config.evidencePlaybackBaseUrl })
      // With the bus up, a 202 means the envelope is on it (Kafka: acks=all);
      // the ledger answers for it only while the bus fails.
      const outcome = await this.ledger.accept(claimKey!, ack, this.config.topicEvidence, message)
      claimKey = undefined
      if (outcome.kind !== 'accepted') {
        // Another attempt holds the event now: this one's objects go, and its client hears what is true.
        await session.discard()
        if (outcome.kind === 'replay') return replay(outcome.ack)
        throw inProgress(envelope.event_id)
      }
      this.accepted.inc()
      this.acceptedBytes.inc(media.reduce((n, m) => n + m.size, 0))
      return { status: 202, body: ack }
    } catch (err) {
      if (lost?.aborted === true && claimKey !== undefined) {
        // Not a failure of this request's: another attempt holds the event. Its client hears what is true.
        const key = claimKey
        claimKey = undefined
        await session.discard()
        const truth = await this.ledger.truth(key)
        if (truth.kind === 'replay') return replay(truth.ack)
        throw inProgress(envelope!.event_id)
      }
      // A failed body (size limit) is the real cause of whatever failed after it.
      throw body.errored ?? err
    } finally {
      if (claimKey !== undefined) {
        await session.discard()
        await this.ledger.release(claimKey)
      }
    }
  }

  /**
   * An event whose media were uploaded with tus: the envelope alone, as
   * JSON, each media hint naming its upload (`upload_url`). The rules of the
   * multipart path hold (validation, the allowlist, checksum_sha256,
   * idempotency, one envelope on the bus); each upload is committed to the
   * event by a conditional write before the envelope is accepted, and given
   * back if the event is not.
   */
  private async commit (ctx: RequestContext, claims: TokenClaims, uploads: ResumableUploads, receivedAt: Date): Promise<Reply> {
    const tenant = claims.tenantKey
    const envelope = parseEnvelope(await readSmallPart(ctx.stream!, ENVELOPE_MAX_BYTES, 'envelope'), this.allowlist)
    const clientId = publishingClientId(envelope, claims.client_id, claims.scope)
    const hints: UploadHint[] = (envelope.media ?? []).map((h, index) => {
      if (h.upload_url === undefined) throw invalid(`media[${index}].upload_url`, 'is required when the envelope is sent alone (application/json)')
      return { index, url: h.upload_url, checksum: h.checksum_sha256 }
    })
    if (hints.length > this.config.evidenceMaxMedia) throw invalid('media', `at most ${this.config.evidenceMaxMedia} media`)
    const twice = hints.findIndex((h, i) => hints.findIndex(o => o.url === h.url) !== i)
    if (twice >= 0) throw invalid(`media[${twice}].upload_url`, 'names an upload another media hint names')
    const key = idempotencyKey(tenant, envelope.event_id)
    const claim = await this.ledger.claim(key, attempt => objectFolder(tenant, envelope.event_id, receivedAt, attempt))
    if (claim.kind === 'replay') return replay(claim.ack)
    if (claim.kind === 'in_progress') throw inProgress(envelope.event_id)
    let held = true
    try {
      const media: StoredMedia[] = []
      for (const hint of hints) media.push(await uploads.take(tenant, hint, key))
      const ack: Acknowledgment = { status: 'accepted', event_id: envelope.event_id, media_count: media.length }
      const message = publishedMessage(envelope, media, { clientId, issuer: claims.iss, tenant, requestId: ctx.requestId, receivedAt, playbackBaseUrl: this.config.evidencePlaybackBaseUrl })
      const outcome = await this.ledger.accept(key, ack, this.config.topicEvidence, message)
      held = false
      if (outcome.kind === 'replay') return replay(outcome.ack)
      if (outcome.kind === 'in_progress') throw inProgress(envelope.event_id)
      this.accepted.inc()
      this.acceptedBytes.inc(media.reduce((n, m) => n + m.size, 0))
      return { status: 202, body: ack }
    } finally {
      if (held) {
        await uploads.untake(tenant, hints.map(h => h.url), key)
        await this.ledger.release(key)
      }
    }
  }

  private async storeMedia (session: UploadSession, bytes: ByteSource, contentType: string, index: number, envelope: EventEnvelope, tenant: string, receivedAt: Date, attempt: string | undefined): Promise<StoredMedia> {
    if (index >= this.config.evidenceMaxMedia) throw invalid('media', `at most ${this.config.evidenceMaxMedia} media parts`)
    if (MEDIA_TYPES[contentType] === undefined) throw invalid(`media[${index}]`, 'must be video/mp4 or video/h264')
    const key = objectKey(tenant, envelope.event_id, index, contentType, receivedAt, attempt)
    const stored = await session.put(key, bytes, contentType)
    const expected = envelope.media?.[index]?.checksum_sha256
    if (expected !== undefined && expected.toLowerCase() !== stored.sha256) {
      throw new GatewayError('checksum_mismatch', 'a media part does not match its checksum', { details: { [`media[${index}]`]: 'checksum_sha256 does not match the uploaded file' } })
    }
    return { index, contentType, size: stored.size, sha256: stored.sha256, uri: stored.uri, etag: stored.etag, key }
  }
}

function isJson (contentType: string | undefined): boolean {
  return contentType?.split(';')[0]?.trim().toLowerCase() === 'application/json'
}
