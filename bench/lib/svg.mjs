// Hand-written SVG charts, no dependency: panels of horizontal grouped bars
// (a run's figures beside its baselines) and of lines (figures across runs,
// a load run second by second), stacked under a title.

const COLORS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#b07aa1', '#edc948', '#9c755f']
const FONT = 'font-family="system-ui, -apple-system, Segoe UI, sans-serif"'
const LABEL_W = 190 // left column: group labels, y-axis values
const VALUE_W = 70 // right of a bar: its value
const BAR_H = 13
const BAR_GAP = 2
const GROUP_GAP = 9

const esc = s => String(s).replace(/[&<>"]/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c])
const text = (x, y, s, attrs = '') => `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${esc(s)}</text>`

/** A value as a chart labels it: 12.3k, 456, 4.56, 0.012. */
export function short (v) {
  if (v === undefined || v === null || Number.isNaN(v)) return '-'
  const a = Math.abs(v)
  if (a >= 1e6) return `${(v / 1e6).toFixed(a >= 1e7 ? 0 : 1)}M`
  if (a >= 1e4) return `${(v / 1e3).toFixed(a >= 1e5 ? 0 : 1)}k`
  if (a >= 100) return v.toFixed(0)
  if (a >= 10) return v.toFixed(1)
  if (a >= 1) return v.toFixed(2)
  return v === 0 ? '0' : v.toPrecision(2)
}

/** An axis tick: 5k, 10k when the axis goes past 10,000; 2.5, 20 below. */
const tick = (t, top) => (top >= 1e4 ? `${+(t / 1e3).toFixed(1)}k` : String(+t.toPrecision(4)))

/** A round upper end for an axis over [0, max], and its ticks. */
function axis (max) {
  if (!(max > 0)) return { top: 1, ticks: [0, 1] }
  const step0 = max / 4
  const mag = 10 ** Math.floor(Math.log10(step0))
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(s => s >= step0)
  const top = Math.ceil(max / step) * step
  return { top, ticks: Array.from({ length: Math.round(top / step) + 1 }, (_, i) => i * step) }
}

function legend (names, x, y) {
  let at = x
  return names.map((name, i) => {
    const s = `<rect x="${at}" y="${y - 9}" width="10" height="10" fill="${COLORS[i % COLORS.length]}"/>` + text(at + 14, y, name, 'font-size="11"')
    at += 24 + name.length * 6.5
    return s
  }).join('')
}

/** { kind: 'bars', title, unit, groups: [{ label, baseline?, bars: [{ series, value, flagged? }] }] } */
function barsPanel (p, y, width) {
  const series = [...new Set(p.groups.flatMap(g => g.bars.map(b => b.series)))]
  const { top, ticks } = axis(Math.max(0, ...p.groups.flatMap(g => g.bars.map(b => b.value))))
  const plotW = width - LABEL_W - VALUE_W
  const x = v => LABEL_W + (v / top) * plotW
  const out = [text(10, y + 14, `${p.title} (${p.unit})`, 'font-size="13" font-weight="600"')]
  if (series.length > 1) out.push(legend(series, LABEL_W, y + 32))
  const plotTop = y + (series.length > 1 ? 42 : 24)
  let at = plotTop
  const rows = []
  for (const g of p.groups) {
    const h = g.bars.length * (BAR_H + BAR_GAP)
    rows.push(text(LABEL_W - 8, at + h / 2 + 4, g.label + (g.baseline ? ' (baseline)' : ''), `font-size="11" text-anchor="end"${g.baseline ? ' font-style="italic"' : ''}`))
    for (const b of g.bars) {
      const color = COLORS[series.indexOf(b.series) % COLORS.length]
      const w = Math.max(0.5, x(b.value) - LABEL_W)
      const look = b.flagged ? `fill="none" stroke="${color}" stroke-dasharray="3 2"` : `fill="${color}"${g.baseline ? ' fill-opacity="0.55"' : ''}`
      rows.push(`<rect x="${LABEL_W}" y="${at.toFixed(1)}" width="${w.toFixed(1)}" height="${BAR_H}" ${look}><title>${esc(`${g.label} ${b.series}: ${b.value}`)}</title></rect>`)
      rows.push(text(LABEL_W + w + 4, at + BAR_H - 2, short(b.value) + (b.flagged ? ' !' : ''), 'font-size="10" fill="#333"'))
      at += BAR_H + BAR_GAP
    }
    at += GROUP_GAP
  }
  const bottom = at
  for (const t of ticks) {
    out.push(`<line x1="${x(t).toFixed(1)}" y1="${plotTop - 4}" x2="${x(t).toFixed(1)}" y2="${bottom - GROUP_GAP + 2}" stroke="#e3e3e3"/>`)
    out.push(text(x(t), bottom + 6, tick(t, top), 'font-size="10" fill="#666" text-anchor="middle"'))
  }
  return { svg: out.join('') + rows.join(''), height: bottom - y + 18 }
}

/** { kind: 'lines', title, unit, x: [label...], series: [{ name, values: [v...], flagged?: [bool...] }] } */
function linesPanel (p, y, width) {
  const plotH = 150
  const plotTop = y + (p.series.length > 1 ? 46 : 26)
  const plotW = width - LABEL_W - 30
  const n = p.x.length
  const { top, ticks } = axis(Math.max(0, ...p.series.flatMap(s => s.values.filter(v => v !== undefined))))
  const px = i => LABEL_W + (n === 1 ? plotW / 2 : (i / (n - 1)) * plotW)
  const py = v => plotTop + plotH - (v / top) * plotH
  const out = [text(10, y + 14, `${p.title} (${p.unit})`, 'font-size="13" font-weight="600"')]
  if (p.series.length > 1) out.push(legend(p.series.map(s => s.name), LABEL_W, y + 32))
  for (const t of ticks) {
    out.push(`<line x1="${LABEL_W}" y1="${py(t).toFixed(1)}" x2="${LABEL_W + plotW}" y2="${py(t).toFixed(1)}" stroke="#e3e3e3"/>`)
    out.push(text(LABEL_W - 6, py(t) + 3, tick(t, top), 'font-size="10" fill="#666" text-anchor="end"'))
  }
  const every = Math.max(1, Math.ceil(n / 10))
  p.x.forEach((label, i) => { if (i % every === 0 || i === n - 1) out.push(text(px(i), plotTop + plotH + 14, label, 'font-size="10" fill="#666" text-anchor="middle"')) })
  p.series.forEach((s, k) => {
    const color = COLORS[k % COLORS.length]
    const pts = s.values.map((v, i) => (v === undefined ? undefined : [px(i), py(v), v, i])).filter(Boolean)
    if (pts.length > 1) out.push(`<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${pts.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(' ')}"/>`)
    for (const [a, b, v, i] of pts) {
      const hollow = s.flagged?.[i]
      out.push(`<circle cx="${a.toFixed(1)}" cy="${b.toFixed(1)}" r="${n > 60 ? 1.5 : 3}" fill="${hollow ? 'white' : color}" stroke="${color}"><title>${esc(`${p.x[i]} ${s.name}: ${v}${hollow ? ' (flagged)' : ''}`)}</title></circle>`)
    }
  })
  return { svg: out.join(''), height: plotTop - y + plotH + 24 }
}

/** `s` in lines of at most `max` characters, broken at spaces. */
function wrap (s, max = 130) {
  const lines = []
  let line = ''
  for (const word of s.split(' ')) {
    if (line && line.length + 1 + word.length > max) { lines.push(line); line = word } else line = line ? `${line} ${word}` : word
  }
  return line ? [...lines, line] : lines
}

/**
 * An SVG document: `title` and `subtitle` (lines of text, wrapped; `{ text, warn: true }`
 * for a warning), then the panels
 * top to bottom. A panel is { kind: 'bars' | 'lines', ... } (see above).
 */
export function chartSvg ({ title, subtitle = [], panels, width = 820 }) {
  const parts = []
  let y = 4
  for (const line of wrap(title, 85)) { y += 18; parts.push(text(10, y, line, 'font-size="15" font-weight="700"')) }
  y += 8
  for (const item of subtitle) {
    const { text: line, warn } = typeof item === 'string' ? { text: item } : item
    for (const l of wrap(line)) { y += 15; parts.push(text(10, y, l, `font-size="11" fill="${warn ? '#b3261e' : '#555'}"`)) }
  }
  y += 12
  for (const p of panels) {
    const { svg, height } = (p.kind === 'lines' ? linesPanel : barsPanel)(p, y, width)
    parts.push(svg)
    y += height + 10
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${Math.ceil(y)}" viewBox="0 0 ${width} ${Math.ceil(y)}" ${FONT}>` +
    `<rect width="100%" height="100%" fill="white"/>${parts.join('')}</svg>\n`
}
