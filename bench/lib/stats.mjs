// Order statistics of measured values: nearest-rank percentiles of a list,
// the median, and a histogram for more samples than a list should hold.

const round3 = x => (x === undefined ? undefined : Math.round(x * 1000) / 1000)

/** The nearest-rank p-th percentile of an ascending list, or undefined when empty. */
export function quantile (sorted, p) {
  if (sorted.length === 0) return undefined
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p / 100 * sorted.length) - 1))]
}

/** { n, p50, p90, p99, p999, max, avg } of a list of numbers, rounded to 3 decimals. */
export function summarize (values) {
  const v = [...values].sort((a, b) => a - b)
  const q = p => round3(quantile(v, p))
  return { n: v.length, p50: q(50), p90: q(90), p99: q(99), p999: q(99.9), max: round3(v.at(-1)), avg: round3(v.length ? v.reduce((a, b) => a + b, 0) / v.length : undefined) }
}

/** The median of the defined numbers in a list (mean of the middle two for an even count). */
export function median (xs) {
  const v = xs.filter(x => x !== undefined && x !== null && !Number.isNaN(x)).sort((a, b) => a - b)
  if (v.length === 0) return undefined
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2
}

const MIN = 0.001 // ms: everything below counts as 1 µs
const GROWTH = 1.01 // each bucket 1% wider than the one before: percentiles within ±0.5%
const LOG_GROWTH = Math.log(GROWTH)
const BUCKETS = Math.ceil(Math.log(1e7 / MIN) / LOG_GROWTH) + 1 // up to about 3 hours

/**
 * Millions of latencies (ms) in a fixed 18 KiB: logarithmic buckets 1% apart,
 * so a percentile is read to within half a percent of its value.
 */
export class Histogram {
  constructor () {
    this.counts = new Float64Array(BUCKETS)
    this.n = 0
    this.sum = 0
    this.max = 0
  }

  push (v) {
    const i = v <= MIN ? 0 : Math.min(BUCKETS - 1, Math.ceil(Math.log(v / MIN) / LOG_GROWTH))
    this.counts[i]++
    this.n++
    this.sum += v
    if (v > this.max) this.max = v
  }

  /** The p-th percentile (nearest rank), at its bucket's middle, never above the largest value seen. */
  percentile (p) {
    if (!this.n) return undefined
    const want = Math.max(1, Math.ceil(p / 100 * this.n))
    let seen = 0
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.counts[i]
      if (seen >= want) return round3(Math.min(this.max, i === 0 ? MIN : MIN * GROWTH ** (i - 0.5)))
    }
    return round3(this.max)
  }

  stats () {
    const q = p => this.percentile(p)
    return { n: this.n, p50: q(50), p90: q(90), p99: q(99), p999: q(99.9), max: round3(this.n ? this.max : undefined), avg: round3(this.n ? this.sum / this.n : undefined) }
  }
}
