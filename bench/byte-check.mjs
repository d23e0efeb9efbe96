// CPU per record of checking the spec's example record (1.8 KB): the hot
// path's byte walk (src/validation/byte-check.ts, through acceptedAssetId)
// beside the full path it stands in for (JSON.parse, then recordErrors) and
// the walk over the JSON grammar alone (no schema), alternated for
// BYTE_CHECK_ROUNDS rounds of BYTE_CHECK_SECONDS each. CPU time
// (process.cpuUsage), not wall time. Needs `npm run build`.
//
//   node bench/byte-check.mjs
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_DIR } from './lib/paths.mjs'
import { cpuPerCall, printPerCall } from './lib/per-call.mjs'

const num = (name, def) => (process.env[name] ? Number(process.env[name]) : def)
const ROUNDS = num('BYTE_CHECK_ROUNDS', 5)
const SECONDS = num('BYTE_CHECK_SECONDS', 2)

const { recordChecks } = await import(join(REPO_DIR, 'dist', 'telemetry', 'record.js'))
const { METRICS_SCHEMA } = await import(join(REPO_DIR, 'dist', 'telemetry', 'schema.js'))
const { acceptedAssetId, recordErrors } = recordChecks([METRICS_SCHEMA])
const { compileBodyCheck } = await import(join(REPO_DIR, 'dist', 'validation', 'index.js'))
const raw = readFileSync(join(REPO_DIR, 'test', 'fixtures', 'asset-track.json'))
const headers = { 'content-type': 'application/json', 'x-request-id': 'req-1', 'x-request-timestamp': '1763799330' }
const grammar = compileBodyCheck({ type: 'object' })

const variants = {
  'full path': () => Object.keys(recordErrors(JSON.parse(raw.toString()), headers, raw)).length === 0,
  'byte walk': () => acceptedAssetId(headers, raw) !== undefined,
  grammar: () => grammar(raw) !== undefined
}
for (const [name, check] of Object.entries(variants)) if (!check()) throw new Error(`${name} refuses the example record`)

const us = await cpuPerCall(variants, { rounds: ROUNDS, seconds: SECONDS })
console.log(`Checking the example record (${raw.length} B), ${ROUNDS} rounds × ${SECONDS} s, CPU µs per record:`)
printPerCall(us)
