// Baselines of the `runs` scenario: the uWebSockets.js build the gateway uses,
// answering the harness's routes with less and less of its work. MODE:
//
//   bare        POST /runs:start: body read, JSON.parse, `message` checked,
//               202 with the gateway's body shape and a run id made as the
//               gateway's (`run-` + UUIDv7).
//               Nothing stored, no run executed: the ceiling of the route.
//   lmdb-put    the same plus one awaited LMDB put of the queued record as
//               JSON (`db.put`, the gateway's environment options) before the
//               202: the cost of one durable write per request.
//   lmdb-run    the same LMDB writes as the gateway's echo run, without
//               xstate, the hub, the router, pino or metrics: each event's
//               JSON built once and its put queued at once (a transition's
//               with the record, its data, in one `batch`; a step's alone),
//               queued awaited before the 202, running + step queued on the
//               next turn and succeeded once the step is committed (echo
//               awaits each step); each event's bus message (built from the
//               same JSON) appended after its commit, in order per run, in
//               batches (≤ 500, 5 ms linger, one batch in flight), each one
//               value of the `bus-log-v2` database keyed by its last offset,
//               as the local bus does. A run's tenant-index entry and its
//               owner entry are written with its first event, and the owner
//               entry removed once its last event is on the bus, as the
//               gateway's list index and relay do (src/runs/list.ts,
//               src/runs/outbox.ts). Same databases, same options, same
//               run ids, the same event objects (the origin's envelope).
//   memory      echo runs kept in memory, with the gateway's SSE: GET
//               /runs/{id}/stream (`: stream open`, then replay, then live
//               events, closed after the terminal one), POST /runs/{id}/cancel,
//               GET /runs/{id}; `options.steps` / `options.delay_ms` as echo.
//               Nothing persisted, no heartbeat timers, ended runs forgotten
//               after 5 s: the floor of the delivery and subscriber phases.
//   lmdb-sse    memory plus the design's one rule: each event is written to
//               LMDB as lmdb-run writes it (same environment options, same
//               databases, tenant index and owner entry with the first event;
//               no bus) and streamed only once that write is committed, in
//               order per run; the 202 and the cancel's 200 wait for their
//               event's commit and echo awaits each step's before sleeping, as
//               the gateway's. Its delivery latency minus memory's is what
//               commit-before-stream alone costs; the gateway's minus this one
//               is what its own layers add. Ended runs are still forgotten
//               after 5 s (GET /runs/{id} then says 404: no reads from LMDB).
//
// Listens on HOST:PORT (PORT 0: the kernel picks), prints
// {"msg":"runs-uws listening","port":N,"mode":...} on stdout, exits 0 on
// SIGTERM/SIGINT (after the LMDB writes in flight are committed).
import { randomUUID } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { loadUws, listen, readJson } from '../lib/uws.mjs'

const uWS = loadUws('runs-uws')

const MODES = ['bare', 'lmdb-put', 'lmdb-run', 'memory', 'lmdb-sse']
const mode = process.env.MODE ?? 'bare'
if (!MODES.includes(mode)) {
  process.stderr.write(`runs-uws: MODE must be one of ${MODES.join(', ')}, got ${mode}\n`)
  process.exit(2)
}
const TOPIC = 'harness.runs.v1'

// The gateway's LMDB environment (src/state/lmdb.ts) and databases (src/runs/store.ts, src/bus/local.ts).
let state, runsDb, eventsDb, busDb, indexDb, ownersDb
if (mode.startsWith('lmdb')) {
  const { open } = await import('lmdb')
  const { STATE_OPTIONS } = await import('../../dist/state/lmdb.js')
  const dataDir = process.env.DATA_DIR
  if (!dataDir) { process.stderr.write('runs-uws: DATA_DIR is required in the lmdb modes\n'); process.exit(2) }
  mkdirSync(dataDir, { recursive: true })
  state = open({ path: join(dataDir, 'state.lmdb'), ...STATE_OPTIONS })
  runsDb = state.openDB({ name: 'runs-v3', encoding: 'string' })
  eventsDb = state.openDB({ name: 'run-events-v3', encoding: 'string' })
  busDb = state.openDB({ name: 'bus-log-v2' })
  indexDb = state.openDB({ name: 'runs-by-tenant-v1', encoding: 'string' })
  ownersDb = state.openDB({ name: 'run-owners', encoding: 'string' })
}

const JSON_HEADERS = [['content-type', 'application/json']]
const send = (res, status, body) => {
  res.cork(() => {
    res.writeStatus(status)
    for (const [k, v] of JSON_HEADERS) res.writeHeader(k, v)
    res.end(typeof body === 'string' ? body : JSON.stringify(body))
  })
}
const accepted = record => {
  const self = `/runs/${record.run_id}`
  return { run_id: record.run_id, status: record.status, links: { self, stream: `${self}/stream`, cancel: `${self}/cancel` } }
}
// src/runs/ids.ts
const uuidv7 = () => {
  const time = Date.now().toString(16).padStart(12, '0')
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randomUUID().slice(15)}`
}
const newRecord = message => ({
  run_id: `run-${uuidv7()}`,
  tenant_id: 'default',
  mode: 'echo',
  message,
  status: 'queued',
  created_at: new Date().toISOString(),
  started_at: null,
  ended_at: null,
  result: null,
  answer: null,
  artifacts: [],
  conversation_id: null,
  error: null,
  last_event_id: 0
})

// --- lmdb-run: the echo run's writes, in the gateway's order -----------------

/** The local bus's batching: ≤ 500 per transaction, 5 ms linger, one batch in flight. */
const bus = { queue: [], inFlight: false, timer: undefined }
function busAdd (message) {
  bus.queue.push(message)
  if (bus.inFlight) return
  if (bus.queue.length >= 500) busFlush()
  else bus.timer ??= setTimeout(busFlush, 5)
}
function busFlush () {
  clearTimeout(bus.timer)
  bus.timer = undefined
  if (bus.inFlight || bus.queue.length === 0) return
  const batch = bus.queue.splice(0, 500)
  bus.inFlight = true
  const timestamp = Date.now()
  const value = { timestamp, messages: batch.map(m => [m.key, m.value, m.headers]) }
  busDb.transaction(() => {
    let next = 0
    for (const key of busDb.getKeys({ start: [TOPIC, Number.MAX_SAFE_INTEGER], end: [TOPIC, -1], reverse: true, limit: 1 })) next = key[1] + 1
    busDb.put([TOPIC, next + batch.length - 1], value)
  }).then(() => {
    for (const m of batch) m.appended?.()
  }).catch(err => process.stderr.write(`runs-uws: bus append failed: ${err.message}\n`)).finally(() => {
    bus.inFlight = false
    if (bus.queue.length >= 500) busFlush()
    else if (bus.queue.length) bus.timer ??= setTimeout(busFlush, 5)
  })
}

// src/runs/events.ts + manager.ts: an event's JSON, built once: stored as is, the SSE data and the bus value.
const LIFECYCLE = { queued: 'run.queued', running: 'run.started', succeeded: 'run.completed', failed: 'run.failed', cancelled: 'run.failed' }
const MESSAGES = { queued: 'Run queued', running: 'Run started', succeeded: 'Run completed', cancelled: 'Run cancelled' }
const owner = record => `"run_id":${JSON.stringify(record.run_id)},"tenant_id":${JSON.stringify(record.tenant_id)}`
const encodeEvent = (own, id, type, message, dataJson, at) => ({ id, type, json: `{"id":"${id}","type":"${type}","seq":${id},${own},"message":${JSON.stringify(message)},"data":${dataJson},"created_at":"${at}"}` })
/** The next event of a run: a lifecycle one when `status` is given (the record as its data.run), else an echo step. */
function nextEvent (run, status, patch, step) {
  const id = run.record.last_event_id + 1
  const record = { ...run.record, ...patch, last_event_id: id }
  const at = new Date().toISOString()
  let event
  if (status) {
    record.status = status
    const json = JSON.stringify(record)
    const extra = status === 'cancelled' ? ',"reason":"cancelled","error":"cancelled"' : ''
    event = encodeEvent(run.owner, id, LIFECYCLE[status], MESSAGES[status], `{"status":"${status}"${extra},"run":${json}}`, at)
    event.record = json
  } else {
    event = encodeEvent(run.owner, id, 'echo.step', `Echo step ${step.step}`, JSON.stringify(step), at)
  }
  run.record = record
  return event
}

// The gateway's owner entry is its incarnation id: a UUID.
const OWNER = randomUUID()
let pendingWrites = 0
/** src/runs/store.ts `append`: a step alone, a transition with its record (and, first, the run's index and owner entries) in one batch. */
function storeEvent (run, event) {
  const runId = run.record.run_id
  if (event.record === undefined) return eventsDb.put([runId, event.id], event.json)
  return state.batch(() => {
    if (event.id === 1) {
      indexDb.put([run.record.tenant_id, runId], '')
      ownersDb.put(runId, OWNER)
    }
    runsDb.put(runId, event.record)
    eventsDb.put([runId, event.id], event.json)
  })
}

/** src/runs/manager.ts `commit`: queue the write now, publish after its commit, in order per run. */
function appendEvent (run, status, patch, step) {
  const event = nextEvent(run, status, patch, step)
  const runId = run.record.run_id
  pendingWrites++
  const stored = storeEvent(run, event)
  const appended = status !== undefined && status !== 'running' && status !== 'queued' ? () => ownersDb.remove(runId) : undefined
  run.chain = Promise.all([run.chain, stored]).then(() => {
    busAdd({ key: runId, value: event.json, headers: run.headers, appended })
  }).catch(err => process.stderr.write(`runs-uws: append failed: ${err.message}\n`)).finally(() => { pendingWrites-- })
  return run.chain
}

async function startLmdbRun (message) {
  const record = newRecord(message)
  const run = { record, owner: owner(record), headers: { 'client-id': record.tenant_id, schema: 'run-event@2' }, chain: Promise.resolve() }
  await appendEvent(run, 'queued', {})
  setImmediate(async () => {
    appendEvent(run, 'running', { started_at: new Date().toISOString() })
    await appendEvent(run, undefined, {}, { step: 1, text: message })
    appendEvent(run, 'succeeded', { result: { output: message }, answer: message, ended_at: new Date().toISOString() })
  })
  return run.record
}

// --- memory, lmdb-sse: echo runs and SSE (lmdb-sse: each event committed first)

const runs = new Map() // run_id → { record, events: [], subscribers: Set, abort, done, ended, chain }
const RETAIN_MS = 5000

function formatEvent (e) {
  return `id: ${e.id}\nevent: ${e.type}\ndata: ${e.json}\n\n`
}

/** The next event of a run: streamed at once (memory), or once it is committed after the run's earlier ones (lmdb-sse: the promise of that). */
function memEmit (run, status, patch, step) {
  const event = nextEvent(run, status, patch, step)
  if (mode === 'memory') { memPublish(run, event); return undefined }
  pendingWrites++
  run.chain = Promise.all([run.chain, storeEvent(run, event)]).then(() => memPublish(run, event))
    .catch(err => process.stderr.write(`runs-uws: append failed: ${err.message}\n`)).finally(() => { pendingWrites-- })
  return run.chain
}

/** `then` without waiting a turn when nothing is pending, so memory answers in the same turn as before. */
const whenCommitted = (pending, then) => (pending ? pending.then(then) : then())

function memPublish (run, event) {
  run.events.push(event)
  const text = formatEvent(event)
  const terminal = event.type === 'run.completed' || event.type === 'run.failed'
  for (const sub of run.subscribers) {
    if (sub.closed) continue
    sub.res.cork(() => {
      sub.res.write(text)
      if (terminal) { sub.closed = true; sub.res.end() }
    })
  }
  if (terminal) {
    // Not `done`, set when the terminal event is made: in lmdb-sse a stream opened before its commit must still get it.
    run.ended = true
    run.subscribers.clear()
    // Forget ended runs after a while (the gateway keeps them in LMDB, off the heap): a heap that grows
    // with every run would make this baseline's GC pauses, not its delivery path, the tail.
    setTimeout(() => runs.delete(run.record.run_id), RETAIN_MS).unref()
  }
}

const clampInt = (v, def, min, max) => (typeof v === 'number' && Number.isInteger(v) ? Math.min(max, Math.max(min, v)) : def)

/** A run started: its queued record at once (memory) or once committed (lmdb-sse), then executed on the next turn. */
function startMemoryRun (message, options) {
  const record = newRecord(message)
  const run = { record, owner: owner(record), events: [], subscribers: new Set(), abort: new AbortController(), done: false, ended: false, chain: Promise.resolve() }
  runs.set(run.record.run_id, run)
  const steps = clampInt(options?.steps, 1, 0, 1000)
  const delay = clampInt(options?.delay_ms, 0, 0, 60000)
  const execute = async () => {
    if (run.done) return
    memEmit(run, 'running', { started_at: new Date().toISOString() })
    try {
      for (let i = 1; i <= steps; i++) {
        if (delay > 0) await sleep(delay, undefined, { signal: run.abort.signal })
        if (run.done) return
        const committed = memEmit(run, undefined, {}, { step: i, text: message })
        if (committed) await committed
      }
    } catch { return } // cancelled during the sleep
    if (run.done) return
    run.done = true
    memEmit(run, 'succeeded', { result: { output: message }, answer: message, ended_at: new Date().toISOString() })
  }
  return whenCommitted(memEmit(run, 'queued', {}), () => { setImmediate(execute); return run.record })
}

function memoryStream (res, run, after) {
  const sub = { res, closed: false }
  res.onAborted(() => { sub.closed = true; run.subscribers.delete(sub) })
  res.cork(() => {
    res.writeStatus('200 OK')
    res.writeHeader('content-type', 'text/event-stream').writeHeader('cache-control', 'no-cache').writeHeader('connection', 'keep-alive').writeHeader('x-accel-buffering', 'no')
    res.write(': stream open\n\n')
    for (const e of run.events) if (e.id > after) res.write(formatEvent(e))
    if (run.ended) { sub.closed = true; res.end() }
  })
  if (!sub.closed) run.subscribers.add(sub)
}

// --- routing ------------------------------------------------------------------

const RUN_PATH = /^\/runs\/([^/]+)(\/stream|\/cancel)?$/

const app = uWS.App().any('/*', (res, req) => {
  const method = req.getCaseSensitiveMethod()
  const url = req.getUrl()
  if (method === 'POST' && url === '/runs:start') {
    readJson(res, (body, aborted) => {
      if (typeof body?.message !== 'string') return send(res, '400 Bad Request', '{"error":"message is required"}')
      if (mode === 'bare') return send(res, '202 Accepted', accepted(newRecord(body.message)))
      if (mode === 'memory') return send(res, '202 Accepted', accepted(startMemoryRun(body.message, body.options)))
      if (mode === 'lmdb-sse') return startMemoryRun(body.message, body.options).then(record => { if (!aborted()) send(res, '202 Accepted', accepted(record)) })
      const work = mode === 'lmdb-put'
        ? (async () => { const r = newRecord(body.message); await runsDb.put(r.run_id, JSON.stringify(r)); return r })()
        : startLmdbRun(body.message)
      work.then(record => { if (!aborted()) send(res, '202 Accepted', accepted(record)) },
        err => { if (!aborted()) send(res, '500 Internal Server Error', JSON.stringify({ error: err.message })) })
    })
    return
  }
  const m = RUN_PATH.exec(url)
  if ((mode === 'memory' || mode === 'lmdb-sse') && m) {
    const run = runs.get(decodeURIComponent(m[1]))
    if (!run) { res.onAborted(() => {}); return send(res, '404 Not Found', '{"error":"run_not_found"}') }
    if (method === 'GET' && m[2] === undefined) return send(res, '200 OK', run.record)
    if (method === 'GET' && m[2] === '/stream') return memoryStream(res, run, Number(req.getHeader('last-event-id')) || 0)
    if (method === 'POST' && m[2] === '/cancel') {
      let aborted = false
      res.onAborted(() => { aborted = true })
      if (run.done) return send(res, '409 Conflict', '{"error":"run_not_in_flight"}')
      run.done = true
      run.abort.abort()
      return whenCommitted(memEmit(run, 'cancelled', { ended_at: new Date().toISOString() }), () => { if (!aborted) send(res, '200 OK', run.record) })
    }
  }
  if (method === 'GET' && url === '/health') return send(res, '200 OK', '{"status":"ok"}')
  res.onAborted(() => {})
  send(res, '404 Not Found', '{"error":"not_found"}')
})

listen(uWS, app, 'runs-uws', {
  extra: { mode },
  // Let the writes in flight commit, so the database can be read afterwards.
  async beforeExit () {
    for (let i = 0; i < 200 && (pendingWrites > 0 || bus.queue.length > 0 || bus.inFlight); i++) {
      if (!bus.inFlight && bus.queue.length) busFlush()
      await sleep(25)
    }
    if (state) await state.close()
  }
})
