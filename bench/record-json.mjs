// CPU per record of serialising a run's record as the manager does
// (src/runs/events.ts: encodeRecord from the run's recordHead) beside
// JSON.stringify of the whole record, for the three records of an echo run
// (queued, running, succeeded) in turn, each followed by its UTF-8 length
// (what lmdb-js's Buffer.from pays next, so a string left to flatten is
// paid for here too). Alternated for RECORD_JSON_ROUNDS rounds of
// RECORD_JSON_SECONDS each; CPU time (process.cpuUsage). Needs `npm run build`.
//
//   node bench/record-json.mjs
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_DIR } from './lib/paths.mjs'
import { cpuPerCall, printPerCall } from './lib/per-call.mjs'

const num = (name, def) => (process.env[name] ? Number(process.env[name]) : def)
const ROUNDS = num('RECORD_JSON_ROUNDS', 5)
const SECONDS = num('RECORD_JSON_SECONDS', 2)

const { encodeRecord, eventOwner, recordHead } = await import(join(REPO_DIR, 'dist', 'runs', 'events.js'))
const queued = JSON.parse(readFileSync(join(REPO_DIR, 'test', 'fixtures', 'run-record.json'), 'utf8'))
const running = { ...queued, status: 'running', started_at: '2026-11-24T10:41:01.125Z', last_event_id: 2 }
const succeeded = { ...running, status: 'succeeded', ended_at: '2026-11-24T10:41:01.130Z', result: { output: 'hello' }, answer: 'hello', last_event_id: 4 }
const records = [queued, running, succeeded]
const head = recordHead(eventOwner(queued.run_id, queued.tenant_id), queued)

const variants = {
  'JSON.stringify': r => JSON.stringify(r),
  encodeRecord: r => encodeRecord(head, r)
}
for (const [name, encode] of Object.entries(variants)) {
  for (const r of records) if (encode(r) !== JSON.stringify(r)) throw new Error(`${name} writes the ${r.status} record differently`)
}

let bytes = 0
const measured = Object.fromEntries(Object.entries(variants).map(([name, encode]) => [name, i => { bytes += Buffer.byteLength(encode(records[i % 3])) }]))
const us = await cpuPerCall(measured, { rounds: ROUNDS, seconds: SECONDS })
console.log(`A run's record (${Buffer.byteLength(JSON.stringify(succeeded))} B at its end), ${ROUNDS} rounds × ${SECONDS} s, CPU µs per record with its UTF-8 length (${Math.round(bytes / 1e6)} MB in all):`)
printPerCall(us)
