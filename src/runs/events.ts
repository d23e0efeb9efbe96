import type { RunEvent } from './types.js'

/**
 * The part of every event of a run that names it, `"run_id":…,"tenant_id":…`,
 * serialised once per run. With the tenant in each event, a stored event, an
 * SSE frame and a bus message each say whose it is without the record.
 */
export function eventOwner (runId: string, tenantId: string): string {
  return `"run_id":${JSON.stringify(runId)},"tenant_id":${JSON.stringify(tenantId)}`
}

/**
 * Serialises an event once, to the object the origin's client reads,
 * `{id, type, seq, run_id, tenant_id, message, data, created_at}`: `id` is
 * the decimal string of `seq`, the run's dense event number. `type` comes from
 * the catalogue and `createdAt` from `toISOString`, so neither needs escaping;
 * `dataJson` is the JSON of the data object. `id` and `type` lead, so a stored
 * event is read back (`decodeEvent`) without parsing it.
 */
export function encodeEvent (owner: string, id: number, type: string, message: string, dataJson: string, createdAt: string): RunEvent {
  return { id, type, json: `{"id":"${id}","type":"${type}","seq":${id},${owner},"message":${JSON.stringify(message)},"data":${dataJson},"created_at":"${createdAt}"}` }
}

/** The layout `encodeEvent` writes, as far as reading it back needs. */
const STORED = /^\{"id":"(\d+)","type":"([a-z_.]+)"/

/** Reads back an event stored as its `json`, without parsing it. */
export function decodeEvent (json: string): RunEvent {
  const m = STORED.exec(json)
  if (!m) throw new Error(`not a stored run event: ${json.slice(0, 80)}`)
  return { id: Number(m[1]), type: m[2]!, json }
}

/**
 * `text/event-stream` frame of an event, built once however many subscribers
 * it goes to: `id` (what Last-Event-ID resumes after), `event` (its type) and
 * the event object as `data`. JSON escapes CR and LF, so `data` is one line.
 */
export function formatEvent (e: RunEvent): string {
  e.frame ??= `id: ${e.id}\nevent: ${e.type}\ndata: ${e.json}\n\n`
  return e.frame
}

/**
 * The frame that ends a stream early, as the origin harness ends one:
 * `event: error` with `{error, run_id}` (its client raises it with `error` as
 * the code), plus the last id sent so the caller can resume after it. No
 * `id:` line, so an EventSource keeps the last event's id.
 */
export function errorFrame (runId: string, error: string, lastEventId: number): string {
  return `event: error\ndata: ${JSON.stringify({ error, run_id: runId, last_event_id: lastEventId })}\n\n`
}
