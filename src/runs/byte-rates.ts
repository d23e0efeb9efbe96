/** Keys whose budget is full are forgotten past this many, so the table stays small. */
const BUCKETS_KEPT = 10_000

/**
 * A byte rate per key (a tenant): each key may spend `bytesPerS`, and
 * `burstS` seconds of it at once. Spending may take a key below zero (the
 * bytes are counted once they are known); the key then waits until its
 * budget is back above zero.
 */
export class ByteRates {
  private readonly budgets = new Map<string, { level: number, at: number }>()
  private readonly burst: number

  constructor (
    readonly bytesPerS: number,
    burstS: number,
    // A duration, on a clock that never steps.
    private readonly now: () => number = () => performance.now()
  ) {
    this.burst = bytesPerS * burstS
  }

  spend (key: string, bytes: number): void {
    this.budget(key).level -= bytes
  }

  /** How long `key` waits before it spends again (0: no wait). */
  waitMs (key: string): number {
    if (!this.budgets.has(key)) return 0
    const level = this.budget(key).level
    return level < 0 ? -level / this.bytesPerS * 1000 : 0
  }

  /** The key's budget, refilled for the time since it was last looked at. */
  private budget (key: string): { level: number, at: number } {
    const now = this.now()
    let budget = this.budgets.get(key)
    if (budget === undefined) {
      if (this.budgets.size >= BUCKETS_KEPT) this.forgetFull(now)
      budget = { level: this.burst, at: now }
      this.budgets.set(key, budget)
      return budget
    }
    budget.level = Math.min(this.burst, budget.level + (now - budget.at) / 1000 * this.bytesPerS)
    budget.at = now
    return budget
  }

  private forgetFull (now: number): void {
    for (const [key, b] of this.budgets) {
      if (b.level + (now - b.at) / 1000 * this.bytesPerS >= this.burst) this.budgets.delete(key)
    }
  }
}
