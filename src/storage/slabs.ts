import { GatewayError } from '../errors.js'

/** How long unused slabs are kept for the next upload before their memory is returned. */
const TRIM_AFTER_MS = 30_000
/** Seconds a client refused for lack of buffer is told to wait. */
const RETRY_AFTER_S = '2'
/** How often held slabs are checked against the minimum rate and the holding deadline. */
const CHECK_EVERY_MS = 1000
/**
 * A slab's first seconds are not held to the minimum rate: a connection's
 * window opens slowly, and a client may pause between parts of its body.
 */
export const RATE_GRACE_MS = 10_000

/** What one tenant may hold of a pool, and how long anyone waits for it. */
export interface SlabLimits {
  /** Slabs one tenant may hold at once, however many of its uploads want them. */
  slabsPerTenant: number
  /** Objects one tenant may be writing at once; `lease` refuses the next. */
  uploadsPerTenant: number
  /** Longest wait for a slab before `acquire` gives up with `storage_busy`. */
  waitMs: number
  /** Bytes a second a slab must fill at (after RATE_GRACE_MS); a slower upload is ended with 408 `upload_too_slow`. */
  minBytesPerS: number
  /** Longest a slab may be held, filled and stored; past it the upload is ended with 408 `upload_too_slow`. */
  holdMs: number
}

/**
 * The defaults derived from the pool: a quarter of it (at least one slab) is
 * the reserve, kept from any one tenant, so it is always there for the
 * others, while a tenant uploading alone keeps most of the pool's throughput;
 * and a tenant writes at most twice as many objects as it may hold slabs, so
 * its uploads can queue for a slab without one client holding every socket
 * and claim. A pool of one slab has nothing to keep back. A slab must fill
 * at 64 KiB a second (a 8 MiB slab in about two minutes) and be given back
 * within three minutes: a client slower than that holds memory others need
 * for longer than any honest upload of this size takes.
 */
export function defaultLimits (maxSlabs: number): SlabLimits {
  const slabsPerTenant = Math.max(1, maxSlabs - Math.max(1, Math.floor(maxSlabs / 4)))
  return { slabsPerTenant, uploadsPerTenant: 2 * slabsPerTenant, waitMs: 30_000, minBytesPerS: 64 * 1024, holdMs: 180_000 }
}

interface Account { slabs: number, uploads: number, waiting: number }

interface Waiter {
  account: Account
  grant: (slab: Uint8Array) => void
}

/**
 * One memory budget for every object being written: fixed-size slabs (one
 * storage part each), handed out up to `maxSlabs` at a time and reused rather
 * than left to the garbage collector, so N concurrent uploads never hold more
 * than the budget and do not churn the heap. A writer that finds the budget
 * spent waits, and its socket stays paused meanwhile.
 *
 * The budget is shared fairly, the reserve weighing as one more tenant:
 * with n tenants holding or waiting for slabs, each may hold ⌊maxSlabs /
 * (n + 1)⌋ (at least one, at most `slabsPerTenant`), so n tenants within
 * their shares leave a share free for the next one. A tenant's share shrinks
 * as others arrive; slabs it holds above it are not taken back, but come
 * free as its parts are stored and go to tenants under their shares first.
 * Uploading alone, a tenant holds half the pool: one slab filling at the
 * client's pace while the one before is stored. So two tenants (of a pool of
 * four or more) can never take the last slab, however slow their uploads:
 * the third is served at once. Waiters are served in arrival order, skipping
 * those whose tenant holds its share already; nobody waits longer than
 * `waitMs`.
 *
 * Memory held is bounded in time as well as in count: a slab must fill at
 * `minBytesPerS` (a slab fills only as fast as its client sends) and be given
 * back within `holdMs`. An upload that falls behind is ended with 408
 * `upload_too_slow` through its lease's signal, which frees its slabs, so
 * slow clients, however many tenants they use, cannot hold the pool for
 * longer than that.
 *
 * Slabs live in SharedArrayBuffers so the hashing workers read them in place.
 */
export class SlabPool {
  readonly limits: SlabLimits
  private readonly free: Uint8Array[] = []
  private readonly waiters: Waiter[] = []
  private readonly accounts = new Map<string, Account>()
  private readonly leases = new Set<SlabLease>()
  private allocated = 0
  /** Tenants holding or waiting for a slab: how many ways the pool is shared. */
  private active = 0
  private trimTimer: NodeJS.Timeout | undefined
  private checkTimer: NodeJS.Timeout | undefined

  constructor (readonly slabSize: number, readonly maxSlabs: number, limits: Partial<SlabLimits> = {}) {
    if (maxSlabs < 1) throw new RangeError('a slab pool needs at least one slab')
    this.limits = { ...defaultLimits(maxSlabs), ...limits }
  }

  /** Slabs handed out and not yet released. */
  get inUse (): number {
    return this.allocated - this.free.length
  }

  /** Writers waiting for a slab: uploads held back, their sockets paused, because the budget (or their tenant's share) is spent. */
  get waiting (): number {
    return this.waiters.length
  }

  /** Opens one object's use of the pool for `tenant`; refused when the tenant is writing as many objects as it may. */
  lease (tenant: string): SlabLease {
    let account = this.accounts.get(tenant)
    if (account === undefined) {
      account = { slabs: 0, uploads: 0, waiting: 0 }
      this.accounts.set(tenant, account)
    }
    if (account.uploads >= this.limits.uploadsPerTenant) {
      throw busy(`this client is storing ${account.uploads} uploads already (the most it may at once)`)
    }
    account.uploads++
    const lease = new SlabLease(this, tenant, account)
    this.leases.add(lease)
    return lease
  }

  /**
   * The slabs `account` may hold now: with n tenants holding or waiting for
   * slabs (itself included), an even part of the pool split n + 1 ways, the
   * extra part being the reserve; and never more than `slabsPerTenant`.
   */
  private share (account: Account): number {
    const active = this.active + (isActive(account) ? 0 : 1)
    return Math.min(this.limits.slabsPerTenant, Math.max(1, Math.floor(this.maxSlabs / (active + 1))))
  }

  /** @internal Resolves with a slab once the budget and the tenant's share allow; rejects with the signal's reason, or `storage_busy` past the wait limit. */
  acquire (account: Account, signal: AbortSignal): Promise<Uint8Array> {
    if (signal.aborted) return Promise.reject(signal.reason)
    const slab = account.slabs < this.share(account) ? this.take() : undefined
    if (slab) {
      if (!isActive(account)) this.active++
      account.slabs++
      return Promise.resolve(slab)
    }
    return new Promise((resolve, reject) => {
      const leave = (): void => {
        account.waiting--
        if (!isActive(account)) this.active--
        this.waiters.splice(this.waiters.indexOf(waiter), 1)
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
      }
      const onAbort = (): void => { leave(); reject(signal.reason) }
      const timer = setTimeout(() => {
        leave()
        reject(busy(`no upload buffer came free within ${this.limits.waitMs} ms`))
      }, this.limits.waitMs)
      const waiter: Waiter = { account, grant: s => { leave(); resolve(s) } }
      signal.addEventListener('abort', onAbort, { once: true })
      if (!isActive(account)) this.active++
      account.waiting++
      this.waiters.push(waiter)
    })
  }

  /** @internal */
  release (account: Account, slab: Uint8Array): void {
    account.slabs--
    if (!isActive(account)) this.active--
    this.free.push(slab)
    this.dispatch()
    if (this.free.length === this.allocated) this.scheduleTrim()
  }

  /** @internal */
  close (tenant: string, account: Account, lease: SlabLease): void {
    account.uploads--
    if (account.uploads === 0 && account.slabs === 0) this.accounts.delete(tenant)
    this.leases.delete(lease)
  }

  /** @internal A lease now holds a slab: the checks run while any does. */
  holding (): void {
    this.checkTimer ??= setInterval(() => this.check(performance.now()), CHECK_EVERY_MS).unref()
  }

  /** Ends each upload below the minimum rate or past the holding deadline; stops when no slab is held. */
  private check (now: number): void {
    let held = false
    for (const lease of this.leases) {
      const problem = lease.behind(now, this.limits)
      if (problem !== undefined) lease.end(tooSlow(problem))
      held ||= lease.held
    }
    if (!held) {
      clearInterval(this.checkTimer)
      this.checkTimer = undefined
    }
  }

  /** Hands free slabs to the longest waiters whose tenant is under its share. */
  private dispatch (): void {
    for (let i = 0; i < this.waiters.length && (this.free.length > 0 || this.allocated < this.maxSlabs);) {
      const waiter = this.waiters[i]!
      if (waiter.account.slabs >= this.share(waiter.account)) { i++; continue }
      waiter.account.slabs++
      waiter.grant(this.take()!)
    }
  }

  private take (): Uint8Array | undefined {
    if (this.free.length > 0) return this.free.pop()
    if (this.allocated >= this.maxSlabs) return undefined
    this.allocated++
    return new Uint8Array(new SharedArrayBuffer(this.slabSize))
  }

  /** When every slab has been idle for a while, lets them go: a quiet gateway should not hold its peak. */
  private scheduleTrim (): void {
    clearTimeout(this.trimTimer)
    this.trimTimer = setTimeout(() => {
      if (this.free.length !== this.allocated) return
      this.allocated = 0
      this.free.length = 0
    }, TRIM_AFTER_MS).unref()
  }
}

/** One object's slabs, counted against its tenant's share, and the clocks they are held to. */
export class SlabLease {
  private closed = false
  private readonly ended = new AbortController()
  /** When each slab held was granted. */
  private readonly granted = new Map<Uint8Array, number>()
  /** The slab being filled, since when, and with how many bytes so far. */
  private filling: { slab: Uint8Array, since: number, bytes: number } | undefined

  constructor (private readonly pool: SlabPool, private readonly tenant: string, private readonly account: Account) {}

  /** Aborts with 408 `upload_too_slow` when the upload falls below the minimum rate or holds a slab past the deadline. */
  get signal (): AbortSignal {
    return this.ended.signal
  }

  get held (): boolean {
    return this.granted.size > 0
  }

  /** A slab to fill: its rate clock starts now. */
  async acquire (signal: AbortSignal): Promise<Uint8Array> {
    const slab = await this.pool.acquire(this.account, signal)
    const now = performance.now()
    this.granted.set(slab, now)
    this.filling = { slab, since: now, bytes: 0 }
    this.pool.holding()
    return slab
  }

  /** `n` more bytes of the client's are in the slab being filled. */
  filled (n: number): void {
    if (this.filling !== undefined) this.filling.bytes += n
  }

  /** The slab being filled is full, or the body ended: from here its pace is the store's, not the client's. */
  stored (): void {
    this.filling = undefined
  }

  release (slab: Uint8Array): void {
    if (this.filling?.slab === slab) this.filling = undefined
    if (!this.granted.delete(slab)) return
    this.pool.release(this.account, slab)
  }

  /** @internal What is wrong with this upload's pace at `now`, if anything. */
  behind (now: number, limits: SlabLimits): string | undefined {
    for (const since of this.granted.values()) {
      if (now - since > limits.holdMs) return `a buffer slab was held past ${limits.holdMs} ms`
    }
    const f = this.filling
    if (f === undefined || now - f.since <= RATE_GRACE_MS) return undefined
    if (f.bytes < limits.minBytesPerS * (now - f.since - RATE_GRACE_MS) / 1000) return `the upload sent under ${limits.minBytesPerS} bytes a second`
    return undefined
  }

  /** @internal */
  end (reason: GatewayError): void {
    this.filling = undefined
    if (!this.ended.signal.aborted) this.ended.abort(reason)
  }

  /** Ends the object's turn; release its slabs first. */
  close (): void {
    if (this.closed) return
    this.closed = true
    this.pool.close(this.tenant, this.account, this)
  }
}

function isActive (account: Account): boolean {
  return account.slabs > 0 || account.waiting > 0
}

function busy (reason: string): GatewayError {
  return new GatewayError('storage_busy', 'the upload buffers are busy; retry later', { details: { media: reason }, headers: { 'retry-after': RETRY_AFTER_S } })
}

function tooSlow (reason: string): GatewayError {
  return new GatewayError('upload_too_slow', 'the upload was too slow and was ended; retry it', { details: { media: reason } })
}
