import { randomUUID } from 'node:crypto'
import { GatewayError } from '../../errors.js'
import { localProcessAlive, processIdentity } from '../../state/index.js'
import type { UploadRecord, UploadStates, Versioned } from './record.js'

/**
 * A PATCH holding an upload that is not rewritten for this long (on the
 * store's clock) is taken to be gone: its process was killed or cut off. The
 * holder rewrites the record every LOCK_MS / 4, and every write names the
 * version it last wrote, so a holder that was taken over fails its next
 * write and stops: that is the fence.
 */
export const LOCK_MS = 30_000

/** The process writing (its incarnation), and whether another one lives, where that can be known. */
export interface LockOwner {
  readonly id: string
  knows(id: string): boolean
  isAlive(id: string): boolean
}

export const locked = (id: string): GatewayError =>
  new GatewayError('upload_locked', 'another request is writing this upload', { details: { upload: `${id} is being written by another PATCH; retry after it ends` }, headers: { 'retry-after': '1' } })

/**
 * One request's hold on an upload: one PATCH at a time writes it. Taken by a
 * conditional replace that adds the lock; a lock is free once released, or
 * at once when its process is known to be gone (on one DATA_DIR the
 * incarnations say, on one machine the kernel), or once it has not been
 * rewritten for LOCK_MS. `lost` aborts when another request took over.
 */
export class HeldUpload {
  readonly lost = new AbortController()
  private chain: Promise<unknown> = Promise.resolve()
  private readonly timer: NodeJS.Timeout

  private constructor (private readonly states: UploadStates, public record: UploadRecord, private version: string) {
    this.timer = setInterval(() => { this.write(this.record).catch(() => undefined) }, LOCK_MS / 4).unref()
  }

  /** Holds the upload for this request, or throws 423 `upload_locked`. */
  static async take (states: UploadStates, found: Versioned, owner: LockOwner): Promise<HeldUpload> {
    const { record, version } = found
    const lock = record.lock
    if (lock !== undefined && lock.owner !== owner.id) {
      const onThisMachine = lock.pid === undefined ? undefined : localProcessAlive(lock.host, lock.pid, lock.proc_start)
      const gone = onThisMachine === false || ((!states.shared || owner.knows(lock.owner)) && !owner.isAlive(lock.owner))
      if (!gone && ((await states.ageMs(record.tenant, record.id)) ?? 0) < LOCK_MS) throw locked(record.id)
    } else if (lock !== undefined) throw locked(record.id)
    const { host, proc_start: procStart } = processIdentity()
    const held = { ...record, lock: { owner: owner.id, token: randomUUID(), pid: process.pid, ...(host !== undefined ? { host } : {}), ...(procStart !== undefined ? { proc_start: procStart } : {}) } }
    const next = await states.replace(held, version)
    if (next === undefined) throw locked(record.id)
    return new HeldUpload(states, held, next)
  }

  /** Writes `record` (still held); throws 423 if the hold was lost meanwhile. Writes run in order. */
  write (record: UploadRecord): Promise<void> {
    return this.replace(record, this.record.lock)
  }

  private replace (record: UploadRecord, lock: UploadRecord['lock']): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.lost.signal.aborted) throw this.lost.signal.reason
      const next = await this.states.replace({ ...record, lock }, this.version)
      if (next === undefined) {
        this.lost.abort(locked(record.id))
        throw this.lost.signal.reason
      }
      this.version = next
      this.record = { ...record, lock }
    })
    this.chain = run.catch(() => undefined)
    return run
  }

  /** Lets the upload go (unless it was lost): the next request may take it at once. */
  async release (): Promise<void> {
    clearInterval(this.timer)
    if (this.lost.signal.aborted) return
    await this.replace(this.record, undefined).catch(() => undefined)
  }
}
