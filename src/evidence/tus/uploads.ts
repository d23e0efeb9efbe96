import type { Logger } from 'pino'
import type { TokenVerifier } from '../../auth/index.js'
import type { Config } from '../../config/index.js'
import { GatewayError } from '../../errors.js'
import type { Route } from '../../http/index.js'
import type { ObjectStore } from '../../storage/index.js'
import type { HashPool } from '../hasher.js'
import type { StoredMedia } from '../published.js'
import type { LockOwner } from './lock.js'
import { UPLOAD_ID, uploadIdOf } from './protocol.js'
import { expiryOf, type UploadStates, type Versioned } from './record.js'
import { TusRoutes, discard, isExpired } from './service.js'

/** A media hint that names an upload, as an event commits it. */
export interface UploadHint {
  index: number
  url: string
  checksum?: string | undefined
}

/**
 * Resumable uploads: the tus routes, their commit into an event (`take`),
 * and the sweep that removes what expired (every S3_SWEEP_INTERVAL_MS, on
 * every node: each removal is fenced by a conditional write, so two nodes
 * never both act on one upload).
 */
export class ResumableUploads {
  private readonly tus: TusRoutes
  private timer: NodeJS.Timeout | undefined
  private sweeping: Promise<void> | undefined

  constructor (
    private readonly config: Config,
    private readonly states: UploadStates,
    private readonly store: ObjectStore,
    hashes: HashPool,
    verifier: TokenVerifier,
    owner: LockOwner,
    private readonly log: Logger,
    quiet: { busy(): void, idle(): void }
  ) {
    this.tus = new TusRoutes(config, states, store, hashes, verifier, owner, log, quiet)
  }

  routes (): Route[] {
    return this.tus.routes()
  }

  start (): void {
    this.timer = setInterval(() => {
      this.sweeping ??= this.sweep().then(
        n => { if (n > 0) this.log.info({ removed: n }, 'removed expired resumable uploads') },
        err => this.log.warn({ err }, 'sweep of resumable uploads failed; will retry')
      ).finally(() => { this.sweeping = undefined })
    }, this.config.s3SweepIntervalMs).unref()
  }

  async stop (reason: GatewayError): Promise<void> {
    clearInterval(this.timer)
    this.tus.stop(reason)
    await this.sweeping
  }

  /**
   * Removes uploads past Upload-Expires that no event committed (their parts
   * are aborted, or their object deleted, and their tails) and the records of
   * committed ones past it (with any tail left over); how many. A record marked expired by a termination is removed
   * by it, and its id's expiry is still ahead: should that removal fail, the
   * sweep finds it when the id expires.
   */
  async sweep (now = Date.now()): Promise<number> {
    let removed = 0
    // Only the records whose id says they have expired are read.
    for (const found of await this.states.list(undefined, id => !UPLOAD_ID.test(id) || expiryOf(id) <= now)) {
      const record = found.record
      if (record.state === 'committed') {
        if (record.expires_at > now) continue
        // The object is the event's; a tail a writer that lost the upload left is not.
        await this.store.parts.deleteTails(record.key, record.handle)
        await this.states.delete(record.tenant, record.id)
      } else {
        if (!isExpired(record, now)) continue
        // Marked first, conditionally: an event that commits it meanwhile wins, or loses, cleanly.
        if (record.state !== 'expired' && await this.states.replace({ ...record, state: 'expired' }, found.version) === undefined) continue
        await discard(this.states, this.store, record)
      }
      removed++
    }
    return removed
  }

  /**
   * Commits the upload a media hint names to the event of `claim` (its
   * idempotency key): it must be the caller's, complete, unexpired, not
   * committed to another event, and match the hint's checksum. Failures are
   * 400s keyed `media[<index>]` (`checksum_mismatch`) or
   * `media[<index>].upload_url`. The media as the event publishes it.
   */
  async take (tenant: string, hint: UploadHint, claim: string): Promise<StoredMedia> {
    const where = `media[${hint.index}].upload_url`
    const refuse = (message: string): GatewayError => new GatewayError('validation_error', `${where} ${message}`, { details: { [where]: message } })
    const id = uploadIdOf(hint.url)
    if (id === undefined) throw refuse('is not the URL of an upload of this service')
    for (let round = 0; round < 3; round++) {
      const found: Versioned | undefined = await this.states.get(tenant, id)
      if (found === undefined) throw refuse('names no upload of this client (unknown, terminated or expired)')
      const record = found.record
      if (isExpired(record, Date.now())) throw refuse('names an upload that has expired')
      if (record.state === 'committed' && record.committed_to !== claim) throw refuse('names an upload already committed to another event')
      if (record.state === 'open') throw refuse(`names an unfinished upload (${record.offset} of ${record.length} bytes)`)
      if (hint.checksum !== undefined && hint.checksum.toLowerCase() !== record.sha256) {
        throw new GatewayError('checksum_mismatch', 'a media upload does not match its checksum', { details: { [`media[${hint.index}]`]: 'checksum_sha256 does not match the uploaded file' } })
      }
      const media = { index: hint.index, contentType: record.content_type, size: record.length, sha256: record.sha256!, uri: record.uri!, etag: record.etag!, key: record.key }
      if (record.state === 'committed') return media
      if (await this.states.replace({ ...record, state: 'committed', committed_to: claim }, found.version) !== undefined) return media
    }
    throw new GatewayError('idempotency_in_progress', 'the upload is changing; retry', { details: { [where]: 'changed while being committed; retry' } })
  }

  /** Gives uploads taken for an event that was not accepted back to their client. */
  async untake (tenant: string, urls: readonly string[], claim: string): Promise<void> {
    for (const url of urls) {
      const id = uploadIdOf(url)
      const found = id === undefined ? undefined : await this.states.get(tenant, id).catch(() => undefined)
      if (found?.record.state !== 'committed' || found.record.committed_to !== claim) continue
      const { committed_to: _claim, ...rest } = found.record
      await this.states.replace({ ...rest, state: 'complete' }, found.version).catch(err => this.log.warn({ err, upload: id }, 'could not give an upload back after its event failed'))
    }
  }
}
