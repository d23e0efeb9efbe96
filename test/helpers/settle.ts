/**
 * Polls an async observation until `done` holds, every `intervalMs`, for at most `timeoutMs`,
 * and returns it; throws with the last observation when it never holds. For state outside
 * the test's control (S3, a broker, a relay).
 */
export async function eventually<T> (observe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let value = await observe()
  while (!done(value)) {
    if (Date.now() >= deadline) throw new Error(`not met within ${timeoutMs} ms; last observed: ${show(value)}`)
    await new Promise(resolve => setTimeout(resolve, intervalMs))
    value = await observe()
  }
  return value
}

function show (value: unknown): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text
}

/** How long a consumer watches for a late copy after the expected ones (docs/testing.md). */
export const SETTLE_MS = 3000

/**
 * Polls a growing list (messages on the local bus, records in a log) until it
 * holds `count` items, then keeps polling until `settleMs` have passed, and
 * returns exactly `count` items: throws at once when an item beyond `count`
 * shows up (a late duplicate), or with the last observation when fewer than
 * `count` arrive within `timeoutMs`.
 */
export function settled<T> (observe: () => Promise<T[]>, count: number, options: SettleOptions = {}): Promise<T[]> {
  return settledBetween(observe, count, count, options)
}

export interface SettleOptions { settleMs?: number, timeoutMs?: number, intervalMs?: number }

/**
 * `settled` for a count known only within bounds: at least `min` items, then
 * `settleMs` with the list unchanged; throws at once on item `max + 1`.
 */
export async function settledBetween<T> (observe: () => Promise<T[]>, min: number, max: number, { settleMs = SETTLE_MS, timeoutMs = 20_000, intervalMs = 100 }: SettleOptions = {}): Promise<T[]> {
  let items = await eventually(observe, v => v.length >= min || v.length > max, timeoutMs, intervalMs)
  let quietUntil = Date.now() + settleMs
  for (;;) {
    if (items.length > max) throw new Error(`${items.length} items, expected ${min === max ? 'exactly' : 'at most'} ${max}: ${show(items)}`)
    if (Date.now() >= quietUntil) return items
    await new Promise(resolve => setTimeout(resolve, intervalMs))
    const next = await observe()
    if (next.length !== items.length) quietUntil = Date.now() + settleMs
    items = next
  }
}
