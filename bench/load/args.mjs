// The load tool's command line: options, their defaults and checks, the
// request mix, and the loopback rule (a non-loopback target needs
// --i-own-this-target).
import { readFileSync } from 'node:fs'
import { UsageError } from '../lib/env.mjs'
import { parseStages, parseThreshold } from './plan.mjs'

export const KINDS = ['telemetry', 'batch', 'stream', 'evidence', 'tus']

export const USAGE = `usage: npm run bench load -- --url <base> --client-id <id> --client-secret <secret> [options]

Sends the spec's requests to a deployment at a fixed rate, open loop: each
request has its time on a schedule that does not wait for answers, and its
latency counts from that time, so a slow server cannot hide its queue.

  --url <base>            the ingest host, e.g. http://127.0.0.1:8080 (required)
  --auth-url <base>       the login host (default: --url)
  --client-id <id>        client credentials for POST /api/v1/login (required)
  --client-secret-file <f>  the client's secret, read from a file (first line)
                          or LOAD_CLIENT_SECRET in the environment; --client-secret <s>
                          works too, but a command line is seen by ps and echoed by npm
  --audience <aud>        the audience to log in for (default evidence-gateway)
  --rate <n>              requests per second, all kinds together (default 50)
  --duration <s>          seconds of sending; it stops by itself (default 10)
  --stages <d:r,...>      ramping instead of --rate/--duration: each stage moves the rate
                          linearly to r over d (e.g. 30s:100,60s:500,30s:0; from 0)
  --threshold <check>     repeatable; all must hold for exit code 0, whatever the statuses:
                          p50|p90|p99|p99.9|avg|max <|<=|>|>= N ms|s   'p99<50ms'
                          errors < N% (requests due and not answered with success)
                          rate >= N/s (successes a second)
  --mix <kind=w,...>      kinds and their weights (default telemetry=100):
                          telemetry  POST /v1/asset/track, the spec's record
                          batch      POST /v1/asset/track:batch, --batch-size of those
                                     records as NDJSON: one request of the rate
                          stream     one record on a telemetry stream (WebSocket), its
                                     latency until its acknowledgment
                          evidence   POST /v1/stream/events, envelope + media
                          tus        a resumable upload of --media-bytes (creation, a PATCH
                                     cut after --tus-cut-after bytes, HEAD, the rest), then
                                     the event committed as JSON; its latency is all of it
  --connections <n>       connections in the pool, and streams for the stream kind (default 32)
  --batch-size <n>        records per batch request (default 100)
  --timeout <s>           per request, answer and body (default 10)
  --media-bytes <n>       size of each evidence request's media part, and of each tus upload
                          (default 65536; 0: none, and 1 for tus)
  --tus-cut-after <n>     bytes of a tus upload's first PATCH before its connection is closed
                          (default: half of --media-bytes; 0: no disconnect)
  --body <file.json>      the telemetry record to send (telemetry, batch, stream) instead of the
                          spec's example, as it is
  --body-module <f.mjs>   a module whose default export (i) => record makes request i's record
  --assets <n>            distinct asset_ids the records cycle through (default 100)
  --max-in-flight <n>     requests waiting for an answer before a due one is
                          counted as not sent (default 10000)
  --out <dir>             where the report goes (default bench/results, or BENCH_RESULTS_DIR)
  --i-own-this-target     allow a target that is not loopback (127.0.0.0/8, ::1, localhost)
  -h, --help

Exit codes: 0 every request succeeded (or, with --threshold, every threshold held);
1 not so; 2 a usage error. The last line on stdout is the summary as one JSON object
(verdict, thresholds, counts, latency percentiles in ms, the report's files).`

/** `telemetry=90,evidence=10` → { telemetry: 90, evidence: 10 }: known kinds, each once, weights >= 0, not all 0. */
export function parseMix (text) {
  const mix = {}
  for (const part of String(text).split(',').map(s => s.trim()).filter(Boolean)) {
    const m = /^([a-z]+)=(\d+(?:\.\d+)?)$/.exec(part)
    if (!m) throw new UsageError(`--mix: "${part}" is not kind=weight (e.g. telemetry=90,evidence=10)`)
    if (!KINDS.includes(m[1])) throw new UsageError(`--mix: unknown kind "${m[1]}" (known: ${KINDS.join(', ')})`)
    if (m[1] in mix) throw new UsageError(`--mix: "${m[1]}" is given twice`)
    mix[m[1]] = Number(m[2])
  }
  if (!Object.values(mix).some(w => w > 0)) throw new UsageError('--mix: at least one kind needs a weight above 0')
  return Object.fromEntries(Object.entries(mix).filter(([, w]) => w > 0))
}

/** Whether a URL's host is this machine's loopback: localhost, 127.0.0.0/8 or ::1. */
export function isLoopback (url) {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase()
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host)
}

function baseUrl (name, value) {
  let u
  try { u = new URL(value) } catch { throw new UsageError(`${name}: not a URL: ${value}`) }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`${name}: only http and https, got ${u.protocol}`)
  return u.origin + u.pathname.replace(/\/+$/, '')
}

const number = (name, min, integer) => v => {
  const n = Number(v)
  if (v === undefined || !Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) throw new UsageError(`${name} takes ${integer ? 'a whole number' : 'a number'} >= ${min}, got ${JSON.stringify(v)}`)
  return n
}

function secretFile (file) {
  let text
  try { text = readFileSync(file, 'utf8') } catch (err) { throw new UsageError(`--client-secret-file: cannot read ${file}: ${err.code ?? err.message}`) }
  const secret = text.split(/\r?\n/)[0].trim()
  if (secret === '') throw new UsageError(`--client-secret-file: ${file} is empty`)
  return secret
}

function jsonFile (file) {
  let value
  try { value = JSON.parse(readFileSync(file, 'utf8')) } catch (err) { throw new UsageError(`--body: ${file}: ${err.code ?? err.message}`) }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`--body: ${file} must hold one JSON object (a record)`)
  return value
}

const OPTIONS = {
  '--url': ['url', v => baseUrl('--url', v)],
  '--auth-url': ['authUrl', v => baseUrl('--auth-url', v)],
  '--client-id': ['clientId', String],
  '--client-secret': ['clientSecret', String],
  '--client-secret-file': ['clientSecret', secretFile],
  '--stages': ['stages', parseStages],
  '--body': ['body', jsonFile],
  '--body-module': ['bodyModule', String],
  '--audience': ['audience', String],
  '--rate': ['rate', number('--rate', 0.1, false)],
  '--duration': ['duration', number('--duration', 0.1, false)],
  '--mix': ['mix', parseMix],
  '--connections': ['connections', number('--connections', 1, true)],
  '--batch-size': ['batchSize', number('--batch-size', 1, true)],
  '--timeout': ['timeout', number('--timeout', 0.1, false)],
  '--media-bytes': ['mediaBytes', number('--media-bytes', 0, true)],
  '--tus-cut-after': ['tusCutAfter', number('--tus-cut-after', 0, true)],
  '--assets': ['assets', number('--assets', 1, true)],
  '--max-in-flight': ['maxInFlight', number('--max-in-flight', 1, true)],
  '--out': ['out', String]
}

/** The options, or { help: true }. Throws UsageError (exit 2) on anything wrong, before any request is sent. */
export function parseArgs (argv, env = process.env) {
  const thresholds = []
  const o = { thresholds, audience: 'evidence-gateway', rate: 50, duration: 10, mix: { telemetry: 100 }, connections: 32, batchSize: 100, timeout: 10, mediaBytes: 65536, assets: 100, maxInFlight: 10000, iOwnThisTarget: false }
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].startsWith('--') && argv[i].includes('=') ? [argv[i].slice(0, argv[i].indexOf('=')), argv[i].slice(argv[i].indexOf('=') + 1)] : [argv[i], undefined]
    if (flag === '-h' || flag === '--help') return { help: true }
    if (flag === '--i-own-this-target') { o.iOwnThisTarget = true; continue }
    if (flag === '--threshold') {
      const value = inline ?? argv[++i]
      if (value === undefined) throw new UsageError('--threshold needs a value')
      thresholds.push(parseThreshold(value))
      continue
    }
    const spec = OPTIONS[flag]
    if (!spec) throw new UsageError(`unknown option ${argv[i]}\n\n${USAGE}`)
    const value = inline ?? argv[++i]
    if (value === undefined) throw new UsageError(`${flag} needs a value`)
    o[spec[0]] = spec[1](value)
  }
  if (o.clientSecret === undefined && env.LOAD_CLIENT_SECRET) o.clientSecret = env.LOAD_CLIENT_SECRET
  if (o.stages !== undefined) o.duration = o.stages.reduce((a, s) => a + s.seconds, 0)
  for (const [flag, key] of [['--url', 'url'], ['--client-id', 'clientId'], ['--client-secret-file (or LOAD_CLIENT_SECRET)', 'clientSecret']]) {
    if (o[key] === undefined) throw new UsageError(`${flag} is required\n\n${USAGE}`)
  }
  o.authUrl ??= o.url
  o.tusCutAfter ??= Math.floor(o.mediaBytes / 2)
  for (const u of new Set([o.url, o.authUrl])) {
    if (!isLoopback(u) && !o.iOwnThisTarget) {
      throw new UsageError(`refusing to load ${u}: it is not loopback. Load only what you own or may test; if you do, add --i-own-this-target`)
    }
  }
  if (o.stages === undefined && Math.round(o.rate * o.duration) < 1) throw new UsageError('--rate × --duration is less than one request')
  return o
}
