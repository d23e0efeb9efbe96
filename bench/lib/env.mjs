// Knobs from the environment: each read one way, each bad value refused
// with a message naming the variable (exit code 2 from the runner).
import { availableParallelism } from 'node:os'

export class UsageError extends Error {}

const raw = name => (process.env[name] ?? '').trim()

/** An integer >= min, or `def` when unset or empty. */
export function intEnv (name, def, min = 0) {
  const v = raw(name)
  if (v === '') return def
  if (!/^\d+$/.test(v) || Number(v) < min) throw new UsageError(`${name} must be an integer >= ${min}, got ${JSON.stringify(process.env[name])}`)
  return Number(v)
}

/** A number that `ok` accepts, or `def` when unset or empty. */
export function numberEnv (name, def, ok) {
  const v = raw(name)
  if (v === '') return def
  if (!ok(Number(v))) throw new UsageError(`${name}: bad value ${JSON.stringify(process.env[name])}`)
  return Number(v)
}

/** A comma-separated list, or `def` when unset or empty. */
export function listEnv (name, def = []) {
  const v = raw(name)
  return v === '' ? def : v.split(',').map(s => s.trim()).filter(Boolean)
}

/** One of `values`, or `def` when unset or empty. */
export function choiceEnv (name, def, values) {
  const v = raw(name) || def
  if (!values.includes(v)) throw new UsageError(`${name} must be one of ${values.join(', ')}, got ${JSON.stringify(v)}`)
  return v
}

/**
 * Where a companion (Kafka, MinIO) runs, as a taskset CPU list: `name` if set
 * (`all`: every CPU), else the load generator's CPU, so the server under test
 * keeps its core. Undefined when the runner does not pin: children then
 * inherit no affinity.
 */
export function companionCpu (name, settings) {
  const v = raw(name)
  if (!settings.pin) return v === '' || v === 'all' ? undefined : v
  if (v === 'all') return `0-${availableParallelism() - 1}`
  return v === '' ? String(settings.wrkCpu) : v
}
