// How figures are printed: one formatter per kind, '-' for a missing value.
const MiB = 1024 * 1024
const missing = v => v === undefined || v === null || Number.isNaN(v)
const or = f => v => (missing(v) ? '-' : f(v))

export const fmt = {
  int: or(v => String(Math.round(v))),
  /** With thousands separators: 12,345. */
  count: or(v => Math.round(v).toLocaleString('en-US')),
  ms: or(v => v.toFixed(2)),
  mib: or(v => `${Math.round(v / MiB)} MiB`),
  kib: or(v => `${(v / 1024).toFixed(1)} KiB`),
  mb: or(v => `${(v / 1e6).toFixed(0)} MB`),
  pct: or(v => `${Math.round(v * 100)}%`),
  ratio: or(v => `${v.toFixed(2)}×`)
}
