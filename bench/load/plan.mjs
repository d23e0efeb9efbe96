// The load tool's plan and verdict: ramping stages (when each request is
// due), and thresholds (what the run must show for the exit code to be 0).
import { UsageError } from '../lib/env.mjs'

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m)?$/
const toSeconds = (n, unit) => unit === 'ms' ? n / 1000 : unit === 'm' ? n * 60 : n

/**
 * `30s:100,60s:500,30s:0` → [{ seconds: 30, rate: 100 }, ...]: each stage
 * moves the rate linearly from the previous stage's (0 before the first) to
 * its own over its duration, as k6's ramping-arrival-rate does.
 */
export function parseStages (text) {
  const stages = String(text).split(',').map(s => s.trim()).filter(Boolean).map(part => {
    const m = /^([^:]+):(\d+(?:\.\d+)?)$/.exec(part)
    const d = m && DURATION.exec(m[1])
    if (!m || !d) throw new UsageError(`--stages: "${part}" is not duration:rate (e.g. 30s:100,60s:500,30s:0)`)
    const seconds = toSeconds(Number(d[1]), d[2])
    if (seconds <= 0) throw new UsageError(`--stages: "${part}" lasts no time`)
    return { seconds, rate: Number(m[2]) }
  })
  if (stages.length === 0) throw new UsageError('--stages: at least one stage')
  return stages
}

/**
 * The due times (ms from the start) of every request of `stages`: request n
 * is due when the integral of the rate reaches n + 1/2, so a stage of a
 * steady rate r spaces its requests 1/r apart, as a fixed --rate does.
 */
export function timeline (stages) {
  const due = []
  let start = 0
  let from = 0
  let done = 0
  for (const { seconds, rate: to } of stages) {
    const slope = (to - from) / seconds
    const count = (from + to) / 2 * seconds
    // Solve from·t + slope·t²/2 = k for the k-th request inside this stage.
    for (let k = Math.ceil(done - 0.5) + 0.5; k - done <= count + 1e-9; k++) {
      const need = k - done
      const t = Math.abs(slope) < 1e-12 ? need / from : (-from + Math.sqrt(Math.max(0, from * from + 2 * slope * need))) / slope
      due.push((start + t) * 1000)
    }
    done += count
    start += seconds
    from = to
  }
  return due
}

const METRIC = /^(p\d+(?:\.\d+)?|avg|max|errors|rate)\s*(<=|<|>=|>)\s*(\d+(?:\.\d+)?)\s*(ms|s|%|\/s)?$/

/**
 * `p99<50ms`, `p99.9<=1s`, `avg<20ms`, `max<2s`, `errors<0.1%` (of the
 * requests due: any not answered with success), `rate>=90/s` (successes a
 * second): each a check of the run's figures, all kinds together.
 */
export function parseThreshold (text) {
  const m = METRIC.exec(String(text).trim())
  if (!m) throw new UsageError(`--threshold: "${text}" is not metric<value (e.g. 'p99<50ms', 'errors<0.1%', 'rate>=90/s')`)
  const [, metric, op, raw, unit] = m
  const latency = metric.startsWith('p') || metric === 'avg' || metric === 'max'
  if (latency && unit !== 'ms' && unit !== 's') throw new UsageError(`--threshold: "${text}": a latency needs ms or s`)
  if (metric === 'errors' && unit !== '%' && unit !== undefined) throw new UsageError(`--threshold: "${text}": errors are a % (or a fraction)`)
  if (metric === 'rate' && unit !== '/s' && unit !== undefined) throw new UsageError(`--threshold: "${text}": a rate is per second`)
  const value = latency ? (unit === 's' ? Number(raw) * 1000 : Number(raw)) : metric === 'errors' && unit === '%' ? Number(raw) / 100 : Number(raw)
  return { text: String(text).trim(), metric, op, value }
}

const COMPARE = { '<': (a, b) => a < b, '<=': (a, b) => a <= b, '>': (a, b) => a > b, '>=': (a, b) => a >= b }

/** Each threshold with what the run measured and whether it held: latencies in ms, errors as a fraction, rate per second. */
export function checkThresholds (thresholds, { latency, due, ok, seconds }) {
  return thresholds.map(t => {
    const actual = t.metric === 'errors' ? (due === 0 ? 0 : (due - ok) / due)
      : t.metric === 'rate' ? ok / Math.max(seconds, 1e-3)
        : t.metric === 'avg' ? latency.avg : t.metric === 'max' ? latency.max : latency.percentile(Number(t.metric.slice(1)))
    const measured = actual ?? Infinity
    return { threshold: t.text, metric: t.metric, actual: measured, passed: COMPARE[t.op](measured, t.value) }
  })
}
