// What each scenario answers: one row of the README's benchmark table per
// question. A question names figures of a saved run (lib/figures.mjs: group
// and series, the panel's unit comes with them): the gateway's, the
// baselines measured in the same run, and the target the ratio or the
// gateway's figure must meet. `npm run bench report` (bench/report.mjs) fills
// them in from bench/saved/.
import { TELEMETRY_TARGETS as T, RUNS_TARGETS as R, RUNS_RATIOS as RR, EVIDENCE_TARGETS as E } from './lib/goals.mjs'

const MiB = 1024 * 1024
const f = (group, series) => ({ group, series })

/**
 * { scenario, question, gateway: figure, also?: [figure], baselines?: [{ name, ...figure }],
 *   target?: { text, ok({ value, ratio }) } }: the ratio is the gateway's
 * figure over the first baseline's.
 */
export const QUESTIONS = [
  {
    scenario: 'health',
    question: 'what the HTTP layer costs a request: `GET /health`',
    gateway: f('gateway', 'req/s'),
    also: [f('gateway', 'p99')],
    baselines: [{ name: 'bare uWS', ...f('bare-uws', 'req/s') }]
  },
  {
    scenario: 'telemetry',
    question: 'one record a request, Kafka acks=all, on one core',
    gateway: f('gateway-kafka', 'req/s'),
    also: [f('gateway-kafka', 'p99')],
    target: { text: `≥ ${T.kafkaReqPerSec.toLocaleString('en-US')} req/s`, ok: ({ value }) => value >= T.kafkaReqPerSec }
  },
  {
    scenario: 'telemetry',
    question: 'the same beside the HTTP floor',
    gateway: f('gateway-kafka', 'req/s'),
    baselines: [{ name: 'bare uWS + JSON.parse', ...f('bare-uws-json', 'req/s') }],
    target: { text: `≥ ${T.vsBare}×`, ok: ({ ratio }) => ratio >= T.vsBare }
  },
  {
    scenario: 'telemetry',
    question: 'the same beside a typical Node service',
    gateway: f('gateway-kafka', 'req/s'),
    baselines: [{ name: 'Fastify + kafkajs', ...f('fastify-kafkajs', 'req/s') }],
    target: { text: `≥ ${T.vsFastify}×`, ok: ({ ratio }) => ratio >= T.vsFastify }
  },
  {
    scenario: 'telemetry',
    question: 'the same beside a Go peer on the same core',
    gateway: f('gateway-kafka', 'req/s'),
    baselines: [{ name: 'Go peer (fasthttp + franz-go)', ...f('go-peer', 'req/s') }],
    target: { text: 'beat it per core: CPU per request, `bench/cpu-ab.mjs`' }
  },
  {
    scenario: 'telemetry',
    question: 'latency at 70% of the peak rate, Kafka',
    gateway: f('gateway-kafka@70%', 'p99'),
    target: { text: `p99 ≤ ${T.pacedP99Ms} ms`, ok: ({ value }) => value <= T.pacedP99Ms }
  },
  {
    scenario: 'telemetry',
    question: 'one record a request, local bus (LMDB log)',
    gateway: f('gateway-local', 'req/s'),
    also: [f('gateway-local', 'p99')],
    baselines: [{ name: 'bare uWS + JSON.parse', ...f('bare-uws-json', 'req/s') }]
  },
  {
    scenario: 'telemetry',
    question: 'batches of 100 records, Kafka acks=all, gzip, on one core',
    gateway: f('gateway-kafka-batch', 'rec/s'),
    also: [f('gateway-kafka-batch', 'p99')],
    baselines: [{ name: 'bare uWS, batch parsed', ...f('bare-uws-batch', 'rec/s') }, { name: 'Go peer', ...f('go-peer-batch', 'rec/s') }, { name: 'kafkajs alone, no HTTP', ...f('kafkajs-batch', 'rec/s') }],
    target: { text: `≥ ${T.batchRecordsPerSec.toLocaleString('en-US')} records/s`, ok: ({ value }) => value >= T.batchRecordsPerSec }
  },
  {
    scenario: 'telemetry',
    question: 'the same batches at 70% of their peak rate',
    gateway: f('gateway-kafka-batch@70%', 'p99'),
    target: { text: `p99 ≤ ${T.batchPacedP99Ms} ms`, ok: ({ value }) => value <= T.batchPacedP99Ms }
  },
  {
    scenario: 'telemetry',
    question: 'the WebSocket stream, one record a message, Kafka acks=all, gzip, on one core',
    gateway: f('gateway-kafka-stream', 'rec/s'),
    also: [f('gateway-kafka-stream', 'p99')],
    baselines: [{ name: 'the one-record route', ...f('gateway-kafka', 'rec/s') }, { name: 'bare uWS, batch parsed', ...f('bare-uws-batch', 'rec/s') }, { name: 'kafkajs alone, no HTTP', ...f('kafkajs-batch', 'rec/s') }],
    target: { text: `≥ ${T.batchRecordsPerSec.toLocaleString('en-US')} records/s`, ok: ({ value }) => value >= T.batchRecordsPerSec }
  },
  {
    scenario: 'telemetry',
    question: 'the stream at 70% of its peak rate',
    gateway: f('gateway-kafka-stream@70%', 'p99'),
    target: { text: `p99 ≤ ${T.batchPacedP99Ms} ms`, ok: ({ value }) => value <= T.batchPacedP99Ms }
  },
  {
    scenario: 'evidence',
    question: '4 concurrent 256 MB uploads to MinIO: throughput',
    gateway: f('gateway ×4', 'MB/s'),
    baselines: [{ name: 'lib-storage straight to MinIO', ...f('direct-lib-storage ×4', 'MB/s') }],
    target: { text: `≥ ${E.ratio}×`, ok: ({ ratio }) => ratio >= E.ratio }
  },
  {
    scenario: 'evidence',
    question: 'the same: peak RSS of the uploader',
    gateway: f('gateway ×4', 'peak RSS'),
    baselines: [{ name: 'lib-storage', ...f('direct-lib-storage ×4', 'peak RSS') }],
    target: { text: `≤ ${E.rssBytes / 1e6} MB (${(E.rssBytes / MiB).toFixed(1)} MiB)`, ok: ({ value }) => value * MiB <= E.rssBytes }
  },
  {
    scenario: 'evidence',
    question: 'the same: event-loop p99 while hashing',
    gateway: f('gateway ×4', 'p99'),
    baselines: [{ name: 'lib-storage', ...f('direct-lib-storage ×4', 'p99') }],
    target: { text: `≤ ${E.lagP99Ms} ms`, ok: ({ value }) => value <= E.lagP99Ms }
  },
  {
    scenario: 'evidence-events',
    question: 'events a second, envelope only (outbox to Kafka)',
    gateway: f('envelope-only', 'req/s'),
    also: [f('envelope-only', 'p99')]
  },
  {
    scenario: 'evidence-events',
    question: 'events a second with a 64 KiB clip each (S3), 4 connections',
    gateway: f('clip-64k', 'req/s'),
    also: [f('clip-64k', 'p99')]
  },
  {
    scenario: 'evidence-events',
    question: 'after a broker freeze, does the outbox drain faster than ingest fills it',
    gateway: f('backlog', 'drained'),
    baselines: [{ name: 'intake, envelope only', ...f('envelope-only', 'req/s') }],
    target: { text: '> 1×', ok: ({ ratio }) => ratio > 1 }
  },
  {
    scenario: 'runs',
    question: '`POST /runs:start` with persistence, on one core',
    gateway: f('gateway', 'accepted (202)'),
    also: [f('gateway', 'ended')],
    target: { text: `≥ ${R.runsPerSec.toLocaleString('en-US')} runs/s`, ok: ({ value }) => value >= R.runsPerSec }
  },
  {
    scenario: 'runs',
    question: 'the same beside its LMDB writes alone',
    gateway: f('gateway', 'accepted (202)'),
    baselines: [{ name: 'the same LMDB writes on bare uWS', ...f('uws-lmdb-run', 'accepted (202)') }],
    target: { text: `≥ ${RR.vsLmdbRun}×`, ok: ({ ratio }) => ratio >= RR.vsLmdbRun }
  },
  ...['10×2', '50×4'].map(load => ({
    scenario: 'runs',
    question: `SSE delivery of every live event, ${load.replace('×', ' runs × ')} streams`,
    gateway: f(`gateway ${load}`, 'p99'),
    baselines: [{ name: 'in-memory SSE', ...f(`uws-sse-memory ${load}`, 'p99') }, { name: 'in-memory SSE + commit first', ...f(`uws-sse-lmdb ${load}`, 'p99') }],
    target: { text: `≤ ${RR.sseVsMemory}× in-memory; p99 ≤ ${R.deliveryP99Ms} ms`, ok: ({ value, ratio }) => ratio <= RR.sseVsMemory && value <= R.deliveryP99Ms }
  })),
  {
    scenario: 'runs',
    question: `${R.subscribers.toLocaleString('en-US')} SSE subscribers held`,
    gateway: f(`gateway ${R.subscribers.toLocaleString('en-US')}`, 'RSS'),
    baselines: [{ name: 'in-memory SSE', ...f(`uws-sse-memory ${R.subscribers.toLocaleString('en-US')}`, 'RSS') }],
    target: { text: `RSS < ${R.rssBytes / MiB / 1024} GiB`, ok: ({ value }) => value * MiB < R.rssBytes }
  },
  ...['telemetry', 'runs'].map(part => ({
    scenario: 'scale',
    question: `${part === 'telemetry' ? 'telemetry (local bus)' : 'runs (echo)'} with WORKERS=2 on the 2 cores`,
    gateway: f(`${part}-w2`, 'req/s'),
    baselines: [{ name: 'WORKERS=1', ...f(`${part}-w1`, 'req/s') }]
  }))
]
