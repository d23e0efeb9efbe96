import { GatewayError } from '../errors.js'

/** How long unused slabs are kept for the next upload before their memory is returned. */
const TRIM_AFTER_MS = 30_000
/** Seconds a client refused for lack of buffer is told to wait. */
const RETRY_AFTER_S = '2'

/** What one tenant may hold of a pool, and how long anyone waits for it. */
export interface SlabLimits {
  /** Slabs one tenant may hold at once, however many of its uploads want them. */
  slabsPerTenant: number
  /** Objects one tenant may be writing at once; `lease` refuses the next. */
  uploadsPerTenant: number
  /** Longest wait for a slab before `acquire` gives up with `storage_busy`. */
  waitMs: number
}

/**
 * The defaults derived from the pool: a quarter of it (at least one slab) is
 * kept from any one tenant, so it is always there for the others, while a
 * tenant uploading alone keeps most of the pool's throughput; and a tenant
 * writes at most twice as many objects as it may hold slabs, so its uploads
 * can queue for a slab without one client holding every socket and claim.
 * A pool of one slab has nothing to keep back.
 */
export function defaultLimits (maxSlabs: number): SlabLimits {
  const slabsPerTenant = Math.max(1, maxSlabs - Math.max(1, Math.floor(maxSlabs / 4)))
  return { slabsPerTenant, uploadsPerTenant: 2 * slabsPerTenant, waitMs: 30_000 }
}

interface Account { slabs: number, uploads: number }

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
 * The budget is shared fairly: each tenant holds at most its share, so slow
 * uploads of one client (a slab fills only as fast as its client sends) can
 * never hold the whole pool. Waiters are served in arrival order, skipping
 * those whose tenant holds its share already; nobody waits longer than
 * `waitMs`.
 *
 * Slabs live in SharedArrayBuffers so the hashing workers read them in place.
 */
export class SlabPool {
  readonly limits: SlabLimits
  private readonly free: Uint8Array[] = []
  private readonly waiters: Waiter[] = []
  private readonly accounts = new Map<string, Account>()
  private allocated = 0
  private trimTimer: NodeJS.Timeout | undefined

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
      account = { slabs: 0, uploads: 0 }
      this.accounts.set(tenant, account)
    }
    if (account.uploads >= this.limits.uploadsPerTenant) {
      throw busy(`this client is storing ${account.uploads} uploads already (the most it may at once)`)
    }
    account.uploads++
    return new SlabLease(this, tenant, account)
  }

  /** @internal Resolves with a slab once the budget and the tenant's share allow; rejects with the signal's reason, or `storage_busy` past the wait limit. */
  acquire (account: Account, signal: AbortSignal): Promise<Uint8Array> {
    if (signal.aborted) return Promise.reject(signal.reason)
    const slab = account.slabs < this.limits.slabsPerTenant ? this.take() : undefined
    if (slab) {
      account.slabs++
      return Promise.resolve(slab)
    }
    return new Promise((resolve, reject) => {
      const leave = (): void => {
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
      this.waiters.push(waiter)
    })
  }

  /** @internal */
  release (account: Account, slab: Uint8Array): void {
    account.slabs--
    this.free.push(slab)
    this.dispatch()
    if (this.free.length === this.allocated) this.scheduleTrim()
  }

  /** @internal */
  close (tenant: string, account: Account): void {
    account.uploads--
    if (account.uploads === 0 && account.slabs === 0) this.accounts.delete(tenant)
  }

  /** Hands free slabs to the longest waiters whose tenant is under its share. */
  private dispatch (): void {
    for (let i = 0; i < this.waiters.length && (this.free.length > 0 || this.allocated < this.maxSlabs);) {
      const waiter = this.waiters[i]!
      if (waiter.account.slabs >= this.limits.slabsPerTenant) { i++; continue }
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

/** One object's slabs, counted against its tenant's share. */
export class SlabLease {
  private closed = false

  constructor (private readonly pool: SlabPool, private readonly tenant: string, private readonly account: Account) {}

  acquire (signal: AbortSignal): Promise<Uint8Array> {
    return this.pool.acquire(this.account, signal)
  }

  release (slab: Uint8Array): void {
    this.pool.release(this.account, slab)
  }

  /** Ends the object's turn; release its slabs first. */
  close (): void {
    if (this.closed) return
    this.closed = true
    this.pool.close(this.tenant, this.account)
  }
}

function busy (reason: string): GatewayError {
  return new GatewayError('storage_busy', 'the upload buffers are busy; retry later', { details: { media: reason }, headers: { 'retry-after': RETRY_AFTER_S } })
}
