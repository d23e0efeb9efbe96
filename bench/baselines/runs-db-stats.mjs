// Helper of the `runs` scenario (not a baseline): reads the runs a server
// stored in its LMDB environment (DATA_DIR/state.lmdb, databases `runs-v3`,
// `run-events-v3`, both JSON text, and `bus-log-v2` (record batches keyed by their last offset): the gateway's, or
// runs-uws.mjs MODE=lmdb-run's)
// while that server is still running (LMDB is multi-process; opened
// read-only here), in a process of its own pinned to the load CPU.
//
// Usage: node runs-db-stats.mjs '<json>' with
//   { dataDir, from, to, waitMs, sample, topic }
// `from`/`to`: the measured window (epoch ms, the runner's clock: same
// machine, same clock as the server's ISO stamps). First waits up to `waitMs`
// for the runs in flight (queued/running) to end, polling every 200 ms.
//
// Then waits (same budget) for the bus log to hold `busPerRun` (4) messages
// per run, or to stop growing for 2 s.
//
// Prints one JSON line: { total, byStatus, inFlightAtEnd, waitedMs, window:
// { created, createdSucceeded, endedInWindow, backlogAtEnd, lastEndedAt,
// drainMs, lagMs: { p50, p90, p99, max }, createdPerSecond }, sample: [{ run_id, status,
// events }], busMessages, busWaitMs }.
import { open } from 'lmdb'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

const cfg = JSON.parse(process.argv[2] ?? '{}')
if (!cfg.dataDir) throw new Error('runs-db-stats: missing dataDir')
const from = cfg.from ?? 0
const to = cfg.to ?? Date.now()
const topic = cfg.topic ?? 'harness.runs.v1'

const state = open({ path: join(cfg.dataDir, 'state.lmdb'), maxDbs: 32, mapSize: 16 * 1024 ** 3, compression: false, readOnly: true })
const runs = state.openDB({ name: 'runs-v3', encoding: 'string' })
const events = state.openDB({ name: 'run-events-v3', encoding: 'string' })
const busLog = state.openDB({ name: 'bus-log-v2' })

const IN_FLIGHT = new Set(['queued', 'running'])

function scan () {
  const byStatus = {}
  let inFlight = 0
  const list = []
  for (const { value: json } of runs.getRange({ snapshot: true })) {
    const value = JSON.parse(json)
    byStatus[value.status] = (byStatus[value.status] ?? 0) + 1
    if (IN_FLIGHT.has(value.status)) inFlight++
    list.push({ id: value.run_id, status: value.status, created: Date.parse(value.created_at), ended: value.ended_at ? Date.parse(value.ended_at) : undefined })
  }
  return { byStatus, inFlight, list }
}

const t0 = Date.now()
let s = scan()
while (s.inFlight > 0 && Date.now() - t0 < (cfg.waitMs ?? 0)) {
  await sleep(200)
  s = scan()
}
const waitedMs = Date.now() - t0

const pct = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(p / 100 * sorted.length) - 1)] : undefined)
const inWindow = s.list.filter(r => r.created >= from && r.created <= to)
const lags = inWindow.filter(r => r.ended !== undefined).map(r => r.ended - r.created).sort((a, b) => a - b)
const lastEnded = inWindow.reduce((m, r) => Math.max(m, r.ended ?? -Infinity), -Infinity)
const window = {
  from,
  to,
  created: inWindow.length,
  createdSucceeded: inWindow.filter(r => r.status === 'succeeded').length,
  createdByStatus: inWindow.reduce((a, r) => { a[r.status] = (a[r.status] ?? 0) + 1; return a }, {}),
  // Runs of any creation time that ended while the load was on.
  endedInWindow: s.list.filter(r => r.ended !== undefined && r.ended >= from && r.ended <= to).length,
  // Created before the end of the load and not ended by then.
  backlogAtEnd: s.list.filter(r => r.created <= to && (r.ended === undefined || r.ended > to)).length,
  lastEndedAt: Number.isFinite(lastEnded) ? lastEnded : undefined,
  drainMs: Number.isFinite(lastEnded) ? Math.max(0, lastEnded - to) : undefined,
  lagMs: { p50: pct(lags, 50), p90: pct(lags, 90), p99: pct(lags, 99), max: lags.at(-1), n: lags.length },
  // Runs created in each second of the window: is the rate steady, or does it sag as the database grows?
  createdPerSecond: from > 0 && to - from <= 3600e3
    ? inWindow.reduce((a, r) => { a[Math.min(a.length - 1, Math.floor((r.created - from) / 1000))]++; return a }, new Array(Math.max(1, Math.ceil((to - from) / 1000))).fill(0))
    : undefined
}

// A spread of run ids from the window, with their stored events.
const n = Math.min(cfg.sample ?? 0, inWindow.length)
const sample = []
for (let i = 0; i < n; i++) {
  const r = inWindow[Math.floor((i + 0.5) * inWindow.length / n)]
  const evs = [...events.getRange({ start: [r.id, 0], end: [r.id, Number.MAX_SAFE_INTEGER] })].map(({ value }) => JSON.parse(value)).map(e => `${e.id}:${e.type}`)
  sample.push({ run_id: r.id, status: r.status, events: evs })
}

// The bus log is appended after the run events (batched, one batch in flight): it may lag
// behind. Wait (within the same budget) until it holds `busPerRun` messages per run or stops growing for 2 s.
// Batches are keyed by their last offset and offsets are dense from 0.
const busCount = () => {
  try {
    for (const key of busLog.getKeys({ start: [topic, Number.MAX_SAFE_INTEGER], end: [topic, -1], reverse: true, limit: 1 })) return key[1] + 1
    return 0
  } catch { return undefined }
}
const tBus = Date.now()
let busMessages = busCount()
const wantBus = (cfg.busPerRun ?? 4) * s.list.length
let stableSince = Date.now()
while (busMessages !== undefined && busMessages < wantBus && Date.now() - t0 < (cfg.waitMs ?? 0) && Date.now() - stableSince < 2000) {
  await sleep(200)
  const n = busCount()
  if (n !== busMessages) stableSince = Date.now()
  busMessages = n
}
const busWaitMs = Date.now() - tBus

process.stdout.write(JSON.stringify({ total: s.list.length, byStatus: s.byStatus, inFlightAtEnd: s.inFlight, waitedMs, window, sample, busMessages, busWaitMs }) + '\n')
await state.close()
