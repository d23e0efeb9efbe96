/** How long unused slabs are kept for the next upload before their memory is returned. */
const TRIM_AFTER_MS = 30_000

/**
 * One memory budget for every object being written: fixed-size slabs (one
 * storage part each), handed out up to `maxSlabs` at a time and reused rather
 * than left to the garbage collector, so N concurrent uploads never hold more
 * than the budget and do not churn the heap. A writer that finds the budget
 * spent waits, and its socket stays paused meanwhile.
 *
 * Slabs live in SharedArrayBuffers so the hashing workers read them in place.
 */
export class SlabPool {
  private readonly free: Uint8Array[] = []
  private readonly waiters: Array<{ grant: (slab: Uint8Array) => void, onAbort: () => void }> = []
  private allocated = 0
  private trimTimer: NodeJS.Timeout | undefined

  constructor (readonly slabSize: number, readonly maxSlabs: number) {
    if (maxSlabs < 1) throw new RangeError('a slab pool needs at least one slab')
  }

  /** Slabs handed out and not yet released. */
  get inUse (): number {
    return this.allocated - this.free.length
  }

  /** Writers waiting for a slab: uploads held back, their sockets paused, because the budget is spent. */
  get waiting (): number {
    return this.waiters.length
  }

  /** Resolves with a slab once the budget allows; rejects with the signal's reason if it aborts first. */
  acquire (signal: AbortSignal): Promise<Uint8Array> {
    if (signal.aborted) return Promise.reject(signal.reason)
    const slab = this.free.pop() ?? (this.allocated < this.maxSlabs ? this.allocate() : undefined)
    if (slab) return Promise.resolve(slab)
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: (s: Uint8Array) => { signal.removeEventListener('abort', waiter.onAbort); resolve(s) },
        onAbort: () => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1)
          reject(signal.reason)
        }
      }
      signal.addEventListener('abort', waiter.onAbort, { once: true })
      this.waiters.push(waiter)
    })
  }

  release (slab: Uint8Array): void {
    const next = this.waiters.shift()
    if (next) {
      next.grant(slab)
      return
    }
    this.free.push(slab)
    if (this.free.length === this.allocated) this.scheduleTrim()
  }

  private allocate (): Uint8Array {
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
