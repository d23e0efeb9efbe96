import { h, svg } from './dom.js'
import { here } from './place.js'

const EVERY_MS = 1000
const POINTS = 60

interface Series {
  label: string
  /** Summed over the metric's label sets. */
  metric: string
  unit: (v: number) => string
}

const SERIES: readonly Series[] = [
  { label: 'telemetry records/s', metric: 'gateway_telemetry_records_total', unit: v => v.toFixed(v < 10 ? 1 : 0) },
  { label: 'evidence uploads/s', metric: 'gateway_evidence_uploads_total', unit: v => v.toFixed(v < 10 ? 1 : 0) },
  { label: 'evidence bytes/s', metric: 'gateway_evidence_media_bytes_total', unit: bytes }
]

function bytes (v: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB']
  let i = 0
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++ }
  return `${v.toFixed(v < 10 && i > 0 ? 1 : 0)} ${units[i]}`
}

/** Sums of the named counters in a Prometheus text exposition. */
export function totals (text: string, names: readonly string[]): Map<string, number> {
  const out = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/.exec(line)
    if (m && names.includes(m[1]!)) out.set(m[1]!, (out.get(m[1]!) ?? 0) + Number(m[3]))
  }
  return out
}

/**
 * The ingest side at a glance: rates from `/metrics` of the origin that
 * served the page, sampled every second, each as a number and a sparkline
 * of the last minute.
 */
export function ingestPanel (root: HTMLElement): void {
  const history = SERIES.map(() => [] as number[])
  const cards = SERIES.map(s => {
    const value = h('span', { class: 'value mono' }, '–')
    const line = svg('polyline', { points: '', class: 'line' })
    const chart = svg('svg', { viewBox: `0 0 ${POINTS - 1} 30`, preserveAspectRatio: 'none', class: 'spark' })
    chart.append(line)
    root.append(h('div', { class: 'card', 'data-metric': s.metric }, h('span', { class: 'label' }, s.label), value, chart))
    return { value, line }
  })
  let last: { at: number, totals: Map<string, number> } | undefined

  async function sample (): Promise<void> {
    let text: string
    try {
      const res = await fetch(here.metrics, { cache: 'no-store' })
      if (!res.ok) throw new Error(String(res.status))
      text = await res.text()
    } catch {
      root.dataset['state'] = 'unavailable'
      return
    }
    root.dataset['state'] = 'live'
    const now = performance.now()
    const current = totals(text, SERIES.map(s => s.metric))
    if (last !== undefined) {
      const seconds = (now - last.at) / 1000
      SERIES.forEach((s, i) => {
        const rate = Math.max(0, ((current.get(s.metric) ?? 0) - (last!.totals.get(s.metric) ?? 0)) / seconds)
        const points = history[i]!
        points.push(rate)
        if (points.length > POINTS) points.shift()
        cards[i]!.value.textContent = current.has(s.metric) ? s.unit(rate) : 'n/a'
        const top = Math.max(...points, 1e-9)
        const offset = POINTS - points.length
        cards[i]!.line.setAttribute('points', points.map((p, x) => `${x + offset},${(29 - (p / top) * 28).toFixed(2)}`).join(' '))
      })
    }
    last = { at: now, totals: current }
  }
  void sample()
  setInterval(() => { void sample() }, EVERY_MS)
}
