// Status counts from a server's JSON access log (the gateway's pino lines
// `{"msg":"request","status":200,...}`), read after the run: wrk only counts
// "non-2xx/3xx" and asking it for statuses (a Lua response() hook) would
// cost it a Lua call per response.
import { openSync, readSync, closeSync, statSync } from 'node:fs'

/** Current size of a log file (0 if missing): an offset to count from. */
export function logSize (file) {
  try { return statSync(file).size } catch { return 0 }
}

/**
 * Counts of `status` over the access-log lines (msg "request") between byte
 * offsets `from` and `to` (end of file when undefined), and the messages of
 * warn/error lines (level >= 40), most frequent first.
 * Resolves to { requests, statuses: { '200': n, ... }, problems: [{ msg, count }] }.
 */
export function accessLogStats (file, from = 0, to = undefined) {
  const statuses = {}
  const problems = new Map()
  let requests = 0
  let fd
  try { fd = openSync(file, 'r') } catch { return { requests, statuses, problems: [] } }
  try {
    const end = to ?? statSync(file).size
    const buf = Buffer.alloc(1 << 20)
    let pos = from
    let rest = ''
    const line = text => {
      if (text.includes('"msg":"request"')) {
        const m = /"status":(\d{3})/.exec(text)
        if (m) { statuses[m[1]] = (statuses[m[1]] ?? 0) + 1; requests++ }
        return
      }
      const lvl = /"level":(\d+)/.exec(text)
      if (lvl && Number(lvl[1]) >= 40) {
        let key = text.slice(0, 300)
        try {
          const o = JSON.parse(text)
          key = [o.code, o.msg, o.err?.message ?? o.err].filter(Boolean).join(': ').slice(0, 300)
        } catch {}
        problems.set(key, (problems.get(key) ?? 0) + 1)
      }
    }
    while (pos < end) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, end - pos), pos)
      if (n <= 0) break
      pos += n
      const lines = (rest + buf.toString('utf8', 0, n)).split('\n')
      rest = lines.pop()
      for (const l of lines) line(l)
    }
    if (rest) line(rest)
  } finally {
    closeSync(fd)
  }
  return { requests, statuses, problems: [...problems].sort((a, b) => b[1] - a[1]).map(([msg, count]) => ({ msg, count })) }
}

/** "200×123, 503×4" */
export function formatStatuses (statuses) {
  return Object.entries(statuses).sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => `${s}×${n}`).join(', ')
}

/** The statuses of `statuses` not in `allowed` (e.g. ['200', '499']), as an object like statuses. */
export function unexpectedStatuses (statuses, allowed) {
  return Object.fromEntries(Object.entries(statuses).filter(([s]) => !allowed.includes(s)))
}

/** "12× msg | 3× msg" for the most frequent warn/error lines of accessLogStats. */
export function formatProblems (problems, most = 5) {
  return problems.slice(0, most).map(p => `${p.count}× ${p.msg}`).join(' | ')
}
