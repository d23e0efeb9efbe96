// The requests the load tool sends, as the spec gives them: a telemetry
// record (the spec's full example, test/fixtures/asset-track.json, with its
// asset cycling and its timestamp now) with a unique X-Request-Id and the
// current X-Request-Timestamp; an evidence event (an envelope with a unique
// event_id and a generated media part).
import { readFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { REPO_DIR } from '../lib/paths.mjs'
import { envelope, evidenceParts } from '../lib/evidence-body.mjs'

const RECORD = JSON.parse(readFileSync(join(REPO_DIR, 'test', 'fixtures', 'asset-track.json'), 'utf8'))

/**
 * Request builders by kind: `(i, token) → { method, path, headers, body,
 * expect }` for the i-th request of run `runId`; paths under `prefix` (the
 * base URL's path). `record(i)` is the telemetry record i (an object, or
 * its JSON text): the spec's example unless the user gave one (--body,
 * --body-module). The media bytes are random, made once per run.
 */
export function requestBuilders ({ runId, prefix, assets, mediaBytes, batchSize, record = specRecord(assets) }) {
  const media = randomBytes(mediaBytes)
  const text = i => { const r = record(i); return typeof r === 'string' ? r : JSON.stringify(r) }
  const common = (token, id) => ({ authorization: `Bearer ${token}`, accept: 'application/json', 'x-request-id': id })
  return {
    telemetry (i, token) {
      const now = new Date()
      return {
        method: 'POST',
        path: `${prefix}/v1/asset/track`,
        headers: { ...common(token, `load-${runId}-${i}`), 'content-type': 'application/json', 'x-request-timestamp': String(Math.floor(now.getTime() / 1000)) },
        body: text(i),
        expect: 200
      }
    },
    batch (i, token) {
      const now = new Date()
      const lines = Array.from({ length: batchSize }, (_, j) => text(i * batchSize + j))
      return {
        method: 'POST',
        path: `${prefix}/v1/asset/track:batch`,
        headers: { ...common(token, `load-${runId}-${i}`), 'content-type': 'application/x-ndjson', 'x-request-timestamp': String(Math.floor(now.getTime() / 1000)) },
        body: lines.join('\n'),
        // Every record accepted: a partial success is counted by its status in the body, not as 200.
        expect: 200,
        expectBody: '"status":"success"'
      }
    },
    stream (i) {
      return { stream: text(i) }
    },
    tus (i) {
      return { tus: `evt-load-${runId}-${i}` }
    },
    evidence (i, token) {
      const id = `load-${runId}-${i}`
      const parts = evidenceParts(envelope(`evt-${id}`, new Date().toISOString()), mediaBytes > 0 ? 'load.mp4' : undefined, mediaBytes)
      return {
        method: 'POST',
        path: `${prefix}/v1/stream/events`,
        headers: { ...common(token, id), 'content-type': parts.contentType },
        body: mediaBytes > 0 ? Buffer.concat([parts.head, media, parts.tail]) : Buffer.concat([parts.head, parts.tail]),
        expect: 202
      }
    }
  }
}

/** Record i of the spec's example: its asset cycling through `assets`, its timestamp now. */
function specRecord (assets) {
  return i => ({ ...RECORD, asset_id: `load-asset-${i % assets}`, timestamp: new Date().toISOString() })
}

/**
 * The kind of each request, in order: smooth weighted round robin, so every
 * stretch of the run has the mix's shares (90/10: nine telemetry, one
 * evidence, in every ten).
 */
export function kindSequence (mix) {
  const kinds = Object.entries(mix)
  const total = kinds.reduce((a, [, w]) => a + w, 0)
  const current = new Map(kinds.map(([k]) => [k, 0]))
  return () => {
    let best
    for (const [k, w] of kinds) {
      current.set(k, current.get(k) + w)
      if (best === undefined || current.get(k) > current.get(best)) best = k
    }
    current.set(best, current.get(best) - total)
    return best
  }
}
