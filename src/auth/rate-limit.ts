interface Window { count: number, resetAt: number }

/**
 * Counts failures per key in fixed windows. Bounded: when full, expired
 * windows are swept, and if none expired the oldest is dropped, so an attacker
 * rotating client_ids cannot grow memory.
 */
export class FailureLimiter {
  private readonly windows = new Map<string, Window>()

  constructor (
    private readonly maxFailures: number,
    private readonly windowMs: number,
    private readonly maxKeys = 100_000,
    private readonly now: () => number = Date.now
  ) {}

  /** Seconds until `key` may try again, or 0 when it may now. */
  retryAfter (key: string): number {
    const w = this.windows.get(key)
    if (!w) return 0
    const now = this.now()
    if (w.resetAt <= now) {
      this.windows.delete(key)
      return 0
    }
    return w.count >= this.maxFailures ? Math.ceil((w.resetAt - now) / 1000) : 0
  }

  fail (key: string): void {
    const now = this.now()
    const w = this.windows.get(key)
    if (w && w.resetAt > now) {
      w.count++
      return
    }
    if (this.windows.size >= this.maxKeys) this.sweep(now)
    this.windows.set(key, { count: 1, resetAt: now + this.windowMs })
  }

  reset (key: string): void {
    this.windows.delete(key)
  }

  private sweep (now: number): void {
    for (const [k, w] of this.windows) if (w.resetAt <= now) this.windows.delete(k)
    if (this.windows.size >= this.maxKeys) this.windows.delete(this.windows.keys().next().value!)
  }
}
