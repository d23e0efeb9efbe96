// How long an LMDB commit of one telemetry batch takes on this disk, as the
// local bus does it (the gateway's open() options, one async transaction per
// batch, one batch at a time): the wait each record of the batch has before
// its answer, whatever the gateway's CPU. Percentiles of LMDB_COMMIT_BATCHES
// commits of LMDB_COMMIT_RECORDS records (the spec's example record), in a
// temp dir under LMDB_COMMIT_DIR (default: the OS temp dir, like the bench's
// DATA_DIR), removed at the end.
//
//   npm run build && node bench/lmdb-commit.mjs
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'lmdb'
import { REPO_DIR } from './lib/paths.mjs'
import { quantile } from './lib/stats.mjs'
import { STATE_OPTIONS } from '../dist/state/lmdb.js'

const num = (name, def) => (process.env[name] ? Number(process.env[name]) : def)
const BATCHES = num('LMDB_COMMIT_BATCHES', 1000)
const RECORDS = num('LMDB_COMMIT_RECORDS', 50)

const value = readFileSync(join(REPO_DIR, 'test', 'fixtures', 'asset-track.json'), 'utf8')
const dir = mkdtempSync(join(process.env.LMDB_COMMIT_DIR ?? tmpdir(), 'lmdb-commit-'))
try {
  const env = open({ path: join(dir, 'state.lmdb'), ...STATE_OPTIONS })
  const db = env.openDB({ name: 'bus-log-v2' })
  const batch = Array.from({ length: RECORDS }, (_, i) => ({ key: `k${i}`, value, headers: { 'x-request-id': `r${i}` } }))
  const times = []
  for (let i = 0; i < BATCHES; i++) {
    const t0 = performance.now()
    await env.transaction(() => { db.put(['asset.telemetry.v1', i], batch) })
    times.push(performance.now() - t0)
  }
  await env.close()
  const sorted = times.sort((a, b) => a - b)
  const p = q => quantile(sorted, q).toFixed(2)
  console.log(`${BATCHES} commits of ${RECORDS} records (${Math.round(RECORDS * value.length / 1024)} KiB) under ${dir}: ` +
    `p50 ${p(50)} ms, p90 ${p(90)} ms, p99 ${p(99)} ms, max ${sorted[sorted.length - 1].toFixed(2)} ms`)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
