// The telemetry scenario's stream load: `streams` WebSockets on
// /v1/asset/track:stream, each message `perMessage` records under one
// sequence number range, for `warmup` then `duration` seconds.
//
// Closed loop (rate 0): each stream keeps `inFlight` records unacknowledged
// (at most the window of its ready frame), as wrk keeps a request per
// connection. Paced (rate: messages a second over all streams): message i is
// due at t0 + i / rate and its latency counts from then, so a full window
// or a slow server shows in the latencies instead of lowering the rate.
//
// A message's latency ends at the acknowledgment range that covers its last
// record. Prints one JSON line: records and messages acknowledged in the
// measured window, their rates, latency percentiles (ms), refusals by
// status, sends that were late by over 2 ms.
//
// Config (one JSON argument): url (http://host:port), token, streams,
// perMessage, inFlight, rate, warmup, duration, bodyFile.
import { readFileSync } from 'node:fs'
import { WebSocket } from 'undici'

const c = JSON.parse(process.argv[2])
const record = JSON.parse(readFileSync(c.bodyFile, 'utf8'))
const records = Array.from({ length: c.perMessage }, (_, i) => JSON.stringify({ ...record, asset_id: `truck-${i}` })).join(',')
const message = seq => `{"seq":${seq},"records":[${records}]}`
const messageBytes = Buffer.byteLength(message(1))
const wsUrl = `${c.url.replace(/^http/, 'ws')}/v1/asset/track:stream`

let measuring = false
let sending = true
const latencies = []
const refused = {}
let acked = 0
let late = 0

/** Opens stream `i`; resolves when its ready frame came, with its window. */
function open (i) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${c.token}`, 'x-stream-id': `bench-${process.pid}-${i}` } })
    const s = { ws, seq: 0, out: 0, pending: [], cap: 0 }
    ws.addEventListener('error', () => reject(new Error(`stream ${i}: upgrade refused or connection lost`)))
    ws.addEventListener('close', e => { if (sending) { process.stderr.write(`stream ${i} closed ${e.code} ${e.reason}\n`); process.exit(1) } })
    ws.addEventListener('message', e => {
      const f = JSON.parse(String(e.data))
      if (f.status === 'ready') {
        s.cap = Math.max(c.perMessage, Math.min(c.inFlight, f.window.records, Math.floor(f.window.bytes / messageBytes) * c.perMessage))
        return resolve(s)
      }
      if (f.status === 'accepted') {
        while (s.pending.length && s.pending[0].last <= f.to) done(s, s.pending.shift(), 'accepted')
      } else {
        refused[f.status] = (refused[f.status] ?? 0) + 1
        const k = s.pending.findIndex(p => p.last >= f.seq)
        if (k >= 0 && s.pending[k].last === f.seq) done(s, s.pending.splice(k, 1)[0], f.status)
      }
      s.kick?.()
    })
  })
}

function done (s, m, status) {
  s.out -= c.perMessage
  if (!measuring) return
  if (status === 'accepted') acked += c.perMessage
  latencies.push(performance.now() - m.due)
}

function send (s, due) {
  const first = s.seq + 1
  s.seq += c.perMessage
  s.out += c.perMessage
  s.pending.push({ last: s.seq, due })
  s.ws.send(message(first))
}

const streams = await Promise.all(Array.from({ length: c.streams }, (_, i) => open(i)))

if (c.rate > 0) {
  // One schedule for all streams, round robin; a message whose stream's window is full waits for it.
  const queue = []
  let i = 0
  let t0 = performance.now()
  const flush = () => {
    for (const s of streams) {
      while (queue.length && s.out + c.perMessage <= s.cap) {
        const due = queue.shift()
        if (performance.now() - due > 2 && measuring) late++
        send(s, due)
      }
    }
  }
  for (const s of streams) s.kick = flush
  const tick = setInterval(() => {
    if (!sending) return
    const now = performance.now()
    while (t0 + i * 1000 / c.rate <= now) queue.push(t0 + i++ * 1000 / c.rate)
    flush()
  }, 1)
  await phases(() => { queue.length = 0; i = 0; t0 = performance.now() })
  clearInterval(tick)
} else {
  for (const s of streams) {
    s.kick = () => { while (sending && s.out + c.perMessage <= s.cap) send(s, performance.now()) }
    s.kick()
  }
  await phases(() => {})
}

/** Warm-up, then the measured window; resolves when it ends. */
async function phases (restart) {
  await new Promise(resolve => setTimeout(resolve, c.warmup * 1000))
  restart()
  measuring = true
  const start = performance.now()
  await new Promise(resolve => setTimeout(resolve, c.duration * 1000))
  measuring = false
  sending = false
  const seconds = (performance.now() - start) / 1000
  for (const s of streams) s.ws.close()
  latencies.sort((a, b) => a - b)
  const pct = p => latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p / 100 * latencies.length))] : undefined
  process.stdout.write(JSON.stringify({
    seconds,
    records: acked,
    messages: latencies.length,
    recordsPerSec: acked / seconds,
    messagesPerSec: latencies.length / seconds,
    latencyMs: { p50: pct(50), p75: pct(75), p90: pct(90), p99: pct(99), max: latencies.at(-1) },
    refused,
    late,
    messageBytes,
    inFlightPerStream: streams[0]?.cap
  }) + '\n', () => process.exit(0))
}
