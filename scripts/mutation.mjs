#!/usr/bin/env node
// `npm run test:mutation [group…]`: Stryker over the pure core, one run per
// group of scripts/mutation-groups.mjs (all groups by default), then the score of each
// module and the total. Exits 1 when a run fails or a module scores under
// TARGET (docs/testing.md).
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { groups } from './mutation-groups.mjs'

const TARGET = 85
const root = fileURLToPath(new URL('..', import.meta.url))
const chosen = process.argv.slice(2)
for (const g of chosen) if (!(g in groups)) throw new Error(`unknown group ${g}; groups: ${Object.keys(groups).join(', ')}`)
const run = chosen.length > 0 ? chosen : Object.keys(groups)

const DETECTED = new Set(['Killed', 'Timeout'])
const UNDETECTED = new Set(['Survived', 'NoCoverage'])
const started = Date.now()
let failed = false
const rows = []
const survivors = []
for (const group of run) {
  const t0 = Date.now()
  const r = spawnSync('npx', ['stryker', 'run', 'stryker.config.mjs'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, STRYKER_GROUP: group }
  })
  const minutes = ((Date.now() - t0) / 60_000).toFixed(1)
  if (r.status !== 0) {
    console.error(`mutation: group ${group} failed (${r.status ?? r.signal})`)
    failed = true
    continue
  }
  const report = JSON.parse(readFileSync(new URL(`../reports/mutation/${group}.json`, import.meta.url), 'utf8'))
  for (const [file, { mutants }] of Object.entries(report.files)) {
    const detected = mutants.filter(m => DETECTED.has(m.status)).length
    const undetected = mutants.filter(m => UNDETECTED.has(m.status)).length
    const score = detected + undetected === 0 ? 100 : (100 * detected) / (detected + undetected)
    rows.push({ group, file, detected, undetected, score, minutes })
    for (const m of mutants.filter(m => UNDETECTED.has(m.status))) {
      survivors.push(`${file}:${m.location.start.line} ${m.mutatorName} ${m.status}: ${JSON.stringify(m.replacement ?? '')}`)
    }
  }
}

const total = rows.reduce((a, r) => ({ detected: a.detected + r.detected, undetected: a.undetected + r.undetected }), { detected: 0, undetected: 0 })
console.log('\nmodule | killed | survived | score')
console.log('--- | ---: | ---: | ---:')
for (const r of rows) console.log(`${r.file} | ${r.detected} | ${r.undetected} | ${r.score.toFixed(1)}%`)
const totalScore = (100 * total.detected) / Math.max(1, total.detected + total.undetected)
console.log(`total | ${total.detected} | ${total.undetected} | ${totalScore.toFixed(1)}%`)
if (survivors.length > 0) console.log(`\nundetected (docs/testing.md explains each):\n${survivors.join('\n')}`)
console.log(`\nmutation: ${run.length} group(s) in ${((Date.now() - started) / 60_000).toFixed(1)} min; reports in reports/mutation/`)
const low = rows.filter(r => r.score < TARGET)
if (low.length > 0) console.error(`mutation: under ${TARGET}%: ${low.map(r => r.file).join(', ')}`)
process.exit(failed || low.length > 0 ? 1 : 0)
