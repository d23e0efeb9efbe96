import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import type { Bus, BusMessage } from '../bus/index.js'
import type { SharedDocuments } from '../cluster/index.js'
import { localProcessAlive, processIdentity } from '../state/index.js'
import type { Acknowledgment } from './claims.js'
import type { EvidenceLedger, LedgerClaim, LedgerOutcome } from './ledger.js'

const CLAIMS = 'idempotency/'
const PENDING = 'pending/'
/**
 * A claim in progress not rewritten for this long (on the store's clock) is
 * free: its holder went quiet (killed, frozen, cut off). The holder rewrites
 * it every LEASE_MS / 4 while it stores media, and every write of its own
 * names the version it last wrote, so a holder that was taken over fails its
 * next write and gives up: that is the fence.
 */
export const LEASE_MS = 20_000
const RENEW_MS = LEASE_MS / 4
/** Rounds of read-and-replace a claim may lose to other writers before it answers 409. */
const MAX_ROUNDS = 3
/** How often accepted envelopes the bus did not take are looked for, here and those any node left. */
const RECOVER_MS = 10_000
/** A pending envelope another node left is published by this one once it is this old (on the store's clock). */
const ORPHAN_MS = 60_000

/** A process that holds a claim or left a marker; `host` and `proc_start` let a process on the same machine ask the kernel. */
interface Holder {
  owner: string
  pid?: number
  host?: string
  proc_start?: string
}

/** The claim of an event_id in `_gateway/idempotency/<tenant key>/<event_id>.json`. */
export type SharedRecord =
  /** `host` and `proc_start`: the holder's kernel and start, so a holder on the same machine is asked of the kernel (`localProcessAlive`). */
  /** `folder`: where the attempt's objects go; whoever takes the claim over from it removes them. */
  | ({ state: 'in_progress', started_at: number, attempt: string, folder?: string } & Holder)
  /** Accepted, with what to publish: whichever node reads it may publish it (the same bytes), until it is done. */
  | { state: 'committed', ack: Acknowledgment, expires_at: number, attempt: string, topic: string, message: BusMessage }
  | { state: 'done', ack: Acknowledgment, expires_at: number }
  | { state: 'released' }

export interface SharedLedgerOptions {
  documents: SharedDocuments
  bus: Bus
  ttlMs: number
  publishWaitMs: number
  /** This process; a holder on this machine's DATA_DIR is asked of the kernel at once. */
  self: { id: string, knows(id: string): boolean, isAlive(id: string): boolean }
  /** Removes the objects under a folder (an attempt that died and was taken over). */
  discard: (folder: string) => Promise<number>
  log: Logger
  now?: () => number
}

interface Held {
  etag: string
  record: SharedRecord
  renew: NodeJS.Timeout
  lost: AbortController
}

/**
 * The ledger of a cluster, in S3, decided by conditional writes so that
 * every node agrees without talking to the others (docs/cluster-state.md):
 *
 * - claim: create the record (`If-None-Match: *`), with a random attempt id
 *   that names this request's objects; a loser reads it: committed or done
 *   and unexpired → replay; in progress and its lease live → 409; else take
 *   it over by replacing that very version (`If-Match`);
 * - accept: replace this attempt's version by `committed`, carrying the ack
 *   and the envelope. Only the holder of the current version can, so of two
 *   attempts one is accepted; the other removes its own objects and answers
 *   what the record says. Then publish, and replace `committed` by `done`.
 *   An envelope the bus did not take stays in the record, named by a marker
 *   under `_gateway/pending/`: this node retries it, and any node publishes
 *   the markers left older than ORPHAN_MS, so no event answered 202 lives on
 *   one disk only. A repeat publishes the same bytes (`message-id` the same).
 */
export class SharedLedger implements EvidenceLedger {
  private readonly held = new Map<string, Held>()
  /** Envelopes this node accepted and the bus has not taken yet, by claim key. */
  private readonly waiting = new Map<string, { since: number }>()
  private timer: NodeJS.Timeout | undefined
  private recovering: Promise<void> | undefined
  /** What the last look at the markers found, cluster-wide: how many, and the age of the oldest (ms, the store's clock). */
  private listed = { count: 0, oldest: 0 }
  private readonly now: () => number
  lastError: string | undefined

  constructor (private readonly options: SharedLedgerOptions) {
    this.now = options.now ?? Date.now
  }

  start (): void {
    this.timer = setInterval(() => { this.recover() }, RECOVER_MS).unref()
    this.recover()
  }

  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.recovering
    for (const h of this.held.values()) clearInterval(h.renew)
  }

  /** Accepted envelopes not on the bus yet: this node's, or the cluster's as the last look at the markers found them. */
  get backlog (): number {
    return Math.max(this.waiting.size, this.listed.count)
  }

  oldestAgeMs (): number {
    let oldest = Infinity
    for (const w of this.waiting.values()) oldest = Math.min(oldest, w.since)
    return Math.max(oldest === Infinity ? 0 : this.now() - oldest, this.listed.oldest)
  }

  async claim (key: string, folder: (attempt: string) => string): Promise<LedgerClaim> {
    const { documents } = this.options
    const path = claimPath(key)
    const attempt = randomBytes(6).toString('hex')
    const mine: SharedRecord = { state: 'in_progress', started_at: this.now(), attempt, folder: folder(attempt), ...this.identity() }
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const created = await documents.create(path, mine)
      if (created !== undefined) return this.hold(key, created, mine)
      const found = await documents.get<SharedRecord>(path)
      // Gone between the two calls (removed by the lifecycle rule): create again.
      if (found === undefined) continue
      const record = found.value
      if ((record.state === 'committed' || record.state === 'done') && record.expires_at > this.now()) {
        if (record.state === 'committed') void this.publishCommitted(key, found.etag, record)
        return { kind: 'replay', ack: record.ack }
      }
      if (record.state === 'in_progress' && await this.holderLives(path, record)) return { kind: 'in_progress' }
      const taken = await documents.replace(path, mine, found.etag)
      if (taken === undefined) continue
      // The objects of the attempt taken over are nobody's now: no event names them.
      if (record.state === 'in_progress' && record.folder !== undefined) this.discard(record.folder)
      return this.hold(key, taken, mine)
    }
    // Several writers are at it at once: one of them holds it now.
    return { kind: 'in_progress' }
  }

  async accept (key: string, ack: Acknowledgment, topic: string, message: BusMessage): Promise<LedgerOutcome> {
    const held = this.let(key)
    const attempt = held?.record.state === 'in_progress' ? held.record.attempt : ''
    const committed: SharedRecord = { state: 'committed', ack, expires_at: this.now() + this.options.ttlMs, attempt, topic, message }
    const etag = held === undefined || held.lost.signal.aborted ? undefined : await this.options.documents.replace(claimPath(key), committed, held.etag)
    if (etag === undefined) return this.truth(key)
    if (await this.publish(topic, message)) {
      await this.finish(key, etag, ack)
      return { kind: 'accepted' }
    }
    // The bus did not take it in time: the envelope is safe in the record; a marker says where to look.
    this.waiting.set(key, { since: this.now() })
    await this.options.documents.put(pendingPath(key), { claim: claimPath(key), ...this.identity() }).catch(err => this.options.log.warn({ err: (err as Error).message, key }, 'pending marker not written; this node retries the envelope, a retry of the client would publish it too'))
    return { kind: 'accepted' }
  }

  async release (key: string): Promise<void> {
    const held = this.let(key)
    if (held === undefined) return
    // A claim this live node failed to release would answer 409 until its lease lapses: not worth failing the request for.
    await this.options.documents.replace(claimPath(key), { state: 'released' }, held.etag).catch(err => this.options.log.warn({ err: (err as Error).message, key }, 'claim not released; it is free once its lease lapses'))
  }

  /** Starts renewing the lease of a claim this request now holds. */
  private hold (key: string, etag: string, record: SharedRecord): LedgerClaim {
    const lost = new AbortController()
    const held: Held = { etag, record, lost, renew: setInterval(() => { this.renew(key, held) }, RENEW_MS) }
    held.renew.unref()
    this.held.set(key, held)
    return { kind: 'claimed', attempt: (record as { attempt: string }).attempt, lost: lost.signal }
  }

  /** Stops renewing: what comes next (commit, release) writes the version held. */
  private let (key: string): Held | undefined {
    const held = this.held.get(key)
    this.held.delete(key)
    if (held) clearInterval(held.renew)
    return held
  }

  /**
   * Rewrites the claim so it stays ours. A write refused means another node
   * took it over (this one was quiet past the lease): the upload is given
   * up. A store that does not answer for the whole lease gives it up too.
   */
  private renew (key: string, held: Held): void {
    const startedAt = performance.now()
    this.options.documents.replace(claimPath(key), held.record, held.etag).then(etag => {
      if (etag !== undefined) held.etag = etag
      else this.lose(key, held, 'the claim was taken over by another attempt')
    }, err => {
      if (performance.now() - startedAt > LEASE_MS) this.lose(key, held, `the claim's lease could not be renewed: ${(err as Error).message}`)
    })
  }

  private lose (key: string, held: Held, why: string): void {
    if (this.held.get(key) === held) this.let(key)
    held.lost.abort(new Error(why))
  }

  private discard (folder: string): void {
    this.options.discard(folder).then(n => {
      if (n > 0) this.options.log.info({ folder, objects: n }, 'objects of an attempt that was taken over removed')
    }, err => this.options.log.warn({ err: (err as Error).message, folder }, 'objects of an attempt that was taken over not removed'))
  }

  /** Who writes a claim or a marker: this process, as another on this machine can ask the kernel about it. */
  private identity (): Holder {
    const { host, proc_start: procStart } = processIdentity()
    return { owner: this.options.self.id, pid: process.pid, ...(host === undefined ? {} : { host }), ...(procStart === undefined ? {} : { proc_start: procStart }) }
  }

  /** Whether a holder lives, when this machine can tell (one of DATA_DIR's processes, or any under this kernel); undefined when it cannot. */
  private known (holder: Partial<Holder>): boolean | undefined {
    const { self } = this.options
    if (holder.owner !== undefined && self.knows(holder.owner)) return self.isAlive(holder.owner)
    return holder.pid === undefined ? undefined : localProcessAlive(holder.host, holder.pid, holder.proc_start)
  }

  /** Whether the holder of a claim in progress still lives: the kernel for one on this machine, else its lease. */
  private async holderLives (path: string, record: Holder): Promise<boolean> {
    const known = this.known(record)
    if (known !== undefined) return known
    const age = await this.options.documents.age(path)
    return age !== undefined && age < LEASE_MS
  }

  /** For an attempt that lost its claim: what the record says now. */
  async truth (key: string): Promise<LedgerOutcome> {
    const found = await this.options.documents.get<SharedRecord>(claimPath(key))
    const record = found?.value
    if (record !== undefined && (record.state === 'committed' || record.state === 'done')) return { kind: 'replay', ack: record.ack }
    return { kind: 'in_progress' }
  }

  /** Publishes within the wait; false when the bus did not take it (or is known to be down). */
  private async publish (topic: string, message: BusMessage): Promise<boolean> {
    const { bus, publishWaitMs } = this.options
    if (bus.unavailable(topic) !== undefined) return false
    let timer: NodeJS.Timeout | undefined
    try {
      await Promise.race([bus.publish(topic, [message]), new Promise((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`the bus did not take it within ${publishWaitMs} ms`)), publishWaitMs) })])
      this.lastError = undefined
      return true
    } catch (err) {
      this.lastError = (err as Error).message
      return false
    } finally {
      clearTimeout(timer)
    }
  }

  /** `committed` → `done`: the envelope no longer needs keeping. Losing the race to another node that did it is fine. */
  private async finish (key: string, etag: string, ack: Acknowledgment): Promise<void> {
    await this.options.documents.replace(claimPath(key), { state: 'done', ack, expires_at: this.now() + this.options.ttlMs }, etag)
      .catch(err => this.options.log.warn({ err: (err as Error).message, key }, 'claim not marked done; it stays committed and a later reader publishes its envelope again (the same bytes)'))
  }

  /** A committed record found by a retry or the recovery: publish its envelope, then mark it done. */
  private async publishCommitted (key: string, etag: string, record: Extract<SharedRecord, { state: 'committed' }>): Promise<boolean> {
    if (!await this.publish(record.topic, record.message)) return false
    await this.finish(key, etag, record.ack)
    return true
  }

  /** Publishes what the bus did not take: this node's waiting envelopes, and the markers others left long ago. */
  private recover (): void {
    this.recovering ??= this.recoverOnce().catch(err => {
      this.options.log.warn({ err: (err as Error).message, waiting: this.waiting.size }, 'pending envelopes not recovered; retrying')
    }).finally(() => { this.recovering = undefined })
  }

  private async recoverOnce (): Promise<void> {
    const { documents, bus } = this.options
    const { listed, now } = await documents.listAt(PENDING)
    const markers = listed.map(m => ({ key: m.key, age: Math.max(0, now - m.lastModified) }))
    this.listed = { count: markers.length, oldest: markers.reduce((n, m) => Math.max(n, m.age), 0) }
    if (bus.unavailable() !== undefined) return
    const due = new Set(this.waiting.keys())
    for (const { key: marker, age } of markers) {
      const key = keyOfPending(marker)
      if (key === undefined || due.has(key)) continue
      // A marker whose writer is known dead is taken at once; another node's after ORPHAN_MS (it retries its own).
      if (age >= ORPHAN_MS || this.known((await documents.get<Partial<Holder>>(marker))?.value ?? {}) === false) due.add(key)
    }
    for (const key of due) {
      const found = await documents.get<SharedRecord>(claimPath(key))
      const record = found?.value
      if (record?.state === 'committed' && !await this.publishCommitted(key, found!.etag, record)) return
      this.waiting.delete(key)
      await documents.delete(pendingPath(key))
      this.listed.count = Math.max(0, this.listed.count - 1)
    }
  }
}

/** `_gateway/idempotency/<tenant key>/<event_id>.json`. */
function claimPath (key: string): string {
  const [tenant, eventId] = key.split('\u0000') as [string, string]
  return `${CLAIMS}${tenant}/${eventId}.json`
}

function pendingPath (key: string): string {
  const [tenant, eventId] = key.split('\u0000') as [string, string]
  return `${PENDING}${tenant}/${eventId}.json`
}

function keyOfPending (path: string): string | undefined {
  const m = /^pending\/([^/]+)\/(.+)\.json$/.exec(path)
  return m ? `${m[1]}\u0000${m[2]}` : undefined
}
