// Prints the fault and attack suites' figures of their last run
// (.reliability/figures.jsonl, written by test/helpers/figures.ts) as
// Markdown tables, one per suite, for docs/reliability.md. A scenario seen
// more than once keeps its latest line.
import { readFileSync } from 'node:fs'
import { join, dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

const file = process.env.RELIABILITY_FIGURES ??
  join(dirname(fileURLToPath(import.meta.url)), '..', '.reliability', 'figures.jsonl')
const latest = new Map()
for (const line of readFileSync(file, 'utf8').split('\n')) {
  if (line.trim() === '') continue
  const row = JSON.parse(line)
  latest.set(`${row.suite}\u0000${row.scenario}`, row)
}
const suites = new Map()
for (const row of latest.values()) {
  if (!suites.has(row.suite)) suites.set(row.suite, [])
  suites.get(row.suite).push(row)
}
for (const [suite, rows] of suites) {
  const columns = [...new Set(rows.flatMap(r => Object.keys(r)))].filter(k => k !== 'suite' && k !== 'scenario' && k !== 'at')
  const day = rows.map(r => r.at).sort().at(-1).slice(0, 10)
  console.log(`### ${suite} (run of ${day})\n`)
  console.log(`| scenario | ${columns.join(' | ')} |`)
  console.log(`|---|${columns.map(() => '---:').join('|')}|`)
  for (const r of rows) console.log(`| ${r.scenario} | ${columns.map(c => r[c] ?? '').join(' | ')} |`)
  console.log('')
}
