// A short reading of a V8 .cpuprofile (from BENCH_CPU_PROF): where the
// server's main thread spent its time during the measured run, by self time,
// per function and per package/file.
import { readFileSync } from 'node:fs'

function where (frame, repoDir) {
  const url = frame.url || ''
  if (!url) return '(native/V8)'
  const path = url.replace(/^file:\/\//, '')
  const nm = path.lastIndexOf('/node_modules/')
  if (nm >= 0) {
    const rest = path.slice(nm + 14).split('/')
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]
  }
  if (path.startsWith('node:')) return path
  return repoDir && path.startsWith(repoDir + '/') ? path.slice(repoDir.length + 1) : path
}

/**
 * { windowed, totalMs, idleMs, functions: [{name, where, selfMs, pct}], places: [...] }
 * `window` ({ startUs, endUs } on the monotonic clock, as process.hrtime)
 * keeps only the samples taken during the measurement; V8 stamps samples on
 * the same clock on Linux. Percentages are of the non-idle time.
 */
export function summarizeProfile (file, { repoDir, top = 15, window } = {}) {
  const prof = JSON.parse(readFileSync(file, 'utf8'))
  const byId = new Map(prof.nodes.map(n => [n.id, n]))
  const inWindow = window && window.startUs < prof.endTime && window.endUs > prof.startTime
  const self = new Map()
  let t = prof.startTime
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i]
    const dt = (prof.timeDeltas[i + 1] ?? 0) / 1000 // a sample stands for the time until the next
    if (inWindow && (t < window.startUs || t > window.endUs)) continue
    self.set(prof.samples[i], (self.get(prof.samples[i]) ?? 0) + dt)
  }
  let total = 0
  let idle = 0
  const fns = new Map()
  const places = new Map()
  for (const [id, ms] of self) {
    const f = byId.get(id).callFrame
    total += ms
    if (f.functionName === '(idle)') { idle += ms; continue }
    const w = where(f, repoDir)
    const loc = f.url ? `${w}:${f.lineNumber + 1}` : w
    const e = fns.get(loc + f.functionName) ?? { name: f.functionName || '(anonymous)', where: loc, selfMs: 0 }
    e.selfMs += ms
    fns.set(loc + f.functionName, e)
    places.set(w, (places.get(w) ?? 0) + ms)
  }
  const busy = total - idle
  const pct = ms => (busy ? (100 * ms) / busy : 0)
  return {
    windowed: Boolean(inWindow),
    totalMs: total,
    idleMs: idle,
    functions: [...fns.values()].sort((a, b) => b.selfMs - a.selfMs).slice(0, top).map(e => ({ ...e, pct: pct(e.selfMs) })),
    places: [...places].map(([w, ms]) => ({ where: w, selfMs: ms, pct: pct(ms) })).sort((a, b) => b.selfMs - a.selfMs).slice(0, top)
  }
}

export function formatProfile (label, file, s) {
  const span = s.windowed ? 'the measured run' : 'the whole process life (start-up and warm-up included)'
  const lines = [
    `cpu profile of ${label} (main thread, ${span}): ${file}`,
    `  ${Math.round(s.totalMs)} ms sampled, ${Math.round(s.idleMs)} ms idle (${s.totalMs ? Math.round(100 * s.idleMs / s.totalMs) : 0}%); top self time, % of busy time:`
  ]
  for (const f of s.functions) lines.push(`  ${f.pct.toFixed(1).padStart(5)}%  ${f.name}  ${f.where}`)
  lines.push('  by package / file:')
  for (const p of s.places) lines.push(`  ${p.pct.toFixed(1).padStart(5)}%  ${p.where}`)
  return lines.join('\n')
}
