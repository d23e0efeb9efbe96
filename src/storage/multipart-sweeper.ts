import type { Logger } from 'pino'
import type { S3Api } from './s3-api.js'
import type { UploadJournal } from './upload-journal.js'

/** First retry of a failed abort; it doubles per failure, up to the sweep interval. */
const FIRST_RETRY_MS = 1000

/**
 * Aborts the recorded multipart uploads that are not in flight: at start
 * (what a crashed or killed process left), after a failed abort (retried
 * with backoff), and every `intervalMs`. Only by the recorded upload id:
 * another upload of the same key (a sibling worker's or another node's,
 * storing a retry of the same event) is live as far as this process can
 * tell, and listing a key's uploads cannot tell them apart. An entry whose
 * create was never answered has no id; its upload, if the store made one,
 * is left to the bucket's lifecycle rule (`lifecycle.ts`) and the entry
 * dropped.
 */
export class MultipartSweeper {
  /** Aborts tried again by the sweep: after a failure, or for uploads an earlier process left. */
  abortsRetried = 0
  /** Entries dropped without an upload id: creates whose answer never came. */
  unidentified = 0
  private readonly failures = new Map<string, { count: number, dueAt: number }>()
  private readonly resolving = new Map<string, Promise<void>>()
  private timer: NodeJS.Timeout | undefined
  private timerAt = Infinity
  private sweeping: Promise<void> | undefined
  private stopped = false

  constructor (private readonly api: S3Api, private readonly journal: UploadJournal, private readonly intervalMs: number, private readonly log?: Logger) {}

  /** Sweeps now (what an earlier process left), then periodically. */
  start (): void {
    this.schedule(0)
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.sweeping
    await Promise.allSettled(this.resolving.values())
  }

  /** Recorded uploads waiting to be aborted. */
  get backlog (): number {
    return this.journal.pending().length
  }

  /**
   * One attempt to abort what entry `id` recorded, once its writer has let
   * it go. On failure the entry stays for the sweep, which retries with
   * backoff, and this rejects with the failure.
   */
  abort (id: string): Promise<void> {
    let running = this.resolving.get(id)
    if (running === undefined) {
      running = this.attempt(id).finally(() => this.resolving.delete(id))
      this.resolving.set(id, running)
    }
    return running
  }

  private async attempt (id: string): Promise<void> {
    const entry = this.journal.get(id)
    if (entry === undefined) {
      this.failures.delete(id)
      return
    }
    try {
      if (entry.upload_id !== undefined) await this.api.abortMultipart(entry.key, entry.upload_id)
      else {
        this.unidentified++
        this.log?.warn({ bucket: entry.bucket, key: entry.key, started_at: entry.started_at }, 'a multipart upload whose create was never answered is left to the bucket\'s lifecycle rule')
      }
      this.failures.delete(id)
      await this.journal.remove(id)
    } catch (err) {
      const count = (this.failures.get(id)?.count ?? 0) + 1
      const delay = Math.min(FIRST_RETRY_MS * 2 ** (count - 1), this.intervalMs)
      this.failures.set(id, { count, dueAt: performance.now() + delay })
      this.schedule(delay)
      throw err
    }
  }

  private async sweep (): Promise<void> {
    for (const { id, entry } of this.journal.pending()) {
      if (this.stopped) return
      if ((this.failures.get(id)?.dueAt ?? 0) > performance.now() || this.resolving.has(id)) continue
      this.abortsRetried++
      await this.abort(id).then(
        () => this.log?.info({ bucket: entry.bucket, key: entry.key, incarnation: entry.incarnation }, 'swept a recorded multipart upload'),
        err => this.log?.warn({ err, bucket: entry.bucket, key: entry.key, failures: this.failures.get(id)?.count }, 'could not abort a recorded multipart upload; will retry'))
    }
  }

  private schedule (delayMs: number): void {
    const at = performance.now() + delayMs
    if (this.stopped || (this.timer !== undefined && this.timerAt <= at)) return
    clearTimeout(this.timer)
    this.timerAt = at
    this.timer = setTimeout(() => this.run(), delayMs).unref()
  }

  private run (): void {
    this.timer = undefined
    this.timerAt = Infinity
    if (this.sweeping) return
    this.sweeping = this.sweep()
      .catch(err => this.log?.error({ err }, 'multipart sweep failed'))
      .finally(() => {
        this.sweeping = undefined
        this.schedule(this.nextDelay())
      })
  }

  /** Until the earliest retry that is due, or the interval. */
  private nextDelay (): number {
    let next = this.intervalMs
    for (const { dueAt } of this.failures.values()) next = Math.min(next, Math.max(0, dueAt - performance.now()))
    return next
  }
}
