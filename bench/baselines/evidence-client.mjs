// Load generator of the `evidence` scenario (not a baseline: it lives here
// beside the scenario's baseline). Sends `concurrency` multipart evidence
// uploads at once to the gateway's POST /v1/stream/events, each body streamed
// from a file (fs.createReadStream piped into http.request, Content-Length
// set, one connection per upload), and times them. Runs as its own process,
// pinned by the scenario to the load CPU, so its CPU and memory are not the
// gateway's.
//
// With `tusPatchBytes`, each upload goes the resumable way instead (tus,
// docs/evidence.md): a creation, PATCHes of that many bytes streamed from
// the file on one kept-alive connection, then the event committed as JSON
// naming the upload; its status and body are the commit's.
//
// Usage: node evidence-client.mjs '<json>' with
//   { url, token, file, size, concurrency, timeoutMs, runId, metrics, tusPatchBytes }
// `metrics: true`: GET /metrics right before the first upload (prom-client
// resets its event-loop histogram on every scrape) and right after the last
// answer, so the second scrape's nodejs_eventloop_lag_* cover the upload
// window exactly.
//
// Prints one JSON line on stdout: { seconds, bytes, mbPerSec, uploads: [{ status,
// body, seconds, error }], cpuSeconds, lag, lagBefore, requestOverheadBytes }; exits 0
// unless it could not run at all (bad arguments, /metrics unreachable).
import { createReadStream } from 'node:fs'
import { Agent, request as httpRequest } from 'node:http'
import { basename } from 'node:path'
import { envelope, evidenceParts } from '../lib/evidence-body.mjs'
import { uploadConfig, secondsSince, timeUploads } from '../lib/upload-script.mjs'

const { cfg, size, timeoutMs, runId } = uploadConfig('evidence-client', ['url', 'token', 'file', 'concurrency'])
const base = new URL(cfg.url)

/** The multipart body around the file: envelope part, then the media part's header; the closing boundary after the file. */
const multipart = i => evidenceParts(envelope(`bench-${runId}-${i}`), `${basename(cfg.file, '.bin')}-${i}.mp4`, size)

/** One upload; resolves (never rejects) to { status, body, seconds, error }. */
function upload (i, t0) {
  const mp = multipart(i)
  return new Promise(resolve => {
    let settled = false
    let answer
    const finish = (out) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve({ ...out, seconds: secondsSince(t0), requestBytes: mp.length })
    }
    const req = httpRequest({
      host: base.hostname,
      port: base.port,
      method: 'POST',
      path: '/v1/stream/events',
      agent: false, // a connection of its own per upload
      headers: {
        authorization: `Bearer ${cfg.token}`,
        'content-type': mp.contentType,
        'content-length': String(mp.length)
      }
    }, res => {
      const chunks = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => {
        answer = { status: res.statusCode, body: Buffer.concat(chunks).toString('utf8').slice(0, 500) }
        finish(answer)
      })
      res.on('error', err => finish({ status: res.statusCode, error: `response: ${err.message}` }))
    })
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer after ${timeoutMs} ms`))
    }, timeoutMs)
    // An early answer (401, 413...) may close the connection under the body
    // still being sent: the answer counts, the write error does not.
    req.on('error', err => { if (!answer) finish({ error: err.message }) })
    req.write(mp.head)
    const file = createReadStream(cfg.file, { highWaterMark: 1024 * 1024 })
    file.on('error', err => req.destroy(err))
    file.on('end', () => req.end(mp.tail))
    file.pipe(req, { end: false })
  })
}

/** One request on `agent`; resolves to { status, headers, body } or rejects. `body`: a string, or a stream piped in. */
function call (agent, method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: base.hostname, port: base.port, method, path, agent, headers: { authorization: `Bearer ${cfg.token}`, ...headers } }, res => {
      const chunks = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8').slice(0, 500) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    if (body === undefined || typeof body === 'string') req.end(body)
    else {
      body.on('error', err => req.destroy(err))
      body.pipe(req)
    }
  })
}

/** One resumable upload (creation, PATCHes, commit); resolves (never rejects) to { status, body, seconds, error }. */
async function tusUpload (i, t0) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const timer = setTimeout(() => agent.destroy(), timeoutMs)
  const tus = { 'tus-resumable': '1.0.0' }
  const done = out => ({ ...out, seconds: secondsSince(t0), requestBytes: size })
  try {
    const created = await call(agent, 'POST', '/v1/stream/uploads', { ...tus, 'upload-length': String(size), 'upload-metadata': `filetype ${Buffer.from('video/mp4').toString('base64')}` })
    if (created.status !== 201) return done({ status: created.status, body: `creation: ${created.body}` })
    const location = created.headers.location
    for (let offset = 0; offset < size;) {
      const end = Math.min(offset + cfg.tusPatchBytes, size)
      const res = await call(agent, 'PATCH', location, { ...tus, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', 'content-length': String(end - offset) },
        createReadStream(cfg.file, { start: offset, end: end - 1, highWaterMark: 1024 * 1024 }))
      if (res.status !== 204) return done({ status: res.status, body: `PATCH at ${offset}: ${res.body}` })
      offset = Number(res.headers['upload-offset'])
    }
    const event = { ...envelope(`bench-${runId}-${i}`), media: [{ upload_url: location }] }
    const commit = await call(agent, 'POST', '/v1/stream/events', { 'content-type': 'application/json' }, JSON.stringify(event))
    return done({ status: commit.status, body: commit.body })
  } catch (err) {
    return done({ error: err.message })
  } finally {
    clearTimeout(timer)
    agent.destroy()
  }
}

async function scrape () {
  const res = await fetch(new URL('/metrics', base), { signal: AbortSignal.timeout(10000) })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`)
  const lag = {}
  for (const m of text.matchAll(/^nodejs_eventloop_lag_(min|max|mean|stddev|p50|p90|p99)_seconds(?:\{[^}]*\})? ([0-9.eE+-]+)$/gm)) lag[m[1]] = Number(m[2])
  return Object.keys(lag).length ? lag : { missing: true }
}

const lagBefore = cfg.metrics ? await scrape() : undefined
const timing = await timeUploads(cfg.concurrency, size, cfg.tusPatchBytes ? tusUpload : upload)
const lag = cfg.metrics ? await scrape() : undefined
process.stdout.write(JSON.stringify({
  ...timing,
  lag,
  lagBefore,
  requestOverheadBytes: multipart(0).length - size,
  maxRssBytes: process.resourceUsage().maxRSS * 1024
}) + '\n')
