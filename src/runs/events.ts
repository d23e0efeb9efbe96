import type { RunEvent, RunRecord } from './types.js'

/**
 * The part of every event of a run that names it, `"run_id":…,"tenant_id":…`,
 * serialised once per run. With the tenant in each event, a stored event, an
 * SSE frame and a bus message each say whose it is without the record.
 */
export function eventOwner (runId: string, tenantId: string): string {
  return `"run_id":${JSON.stringify(runId)},"tenant_id":${JSON.stringify(tenantId)}`
}

/**
 * The members of a run's record that never change, `{"run_id":…,"tenant_id":…,"mode":…,"message":…`
 * (no closing brace), serialised once per run from its `eventOwner`: the message may be 64 KiB.
 */
export function recordHead (owner: string, record: RunRecord): string {
  return `{${owner},"mode":${JSON.stringify(record.mode)},"message":${JSON.stringify(record.message)}`
}

/**
 * A record's JSON, as `JSON.stringify(record)` writes it (the same members in
 * the same order, a member without a JSON value left out), from its
 * `recordHead` and the members that change. A run serialises its record
 * three times; `JSON.stringify` of the whole record took 1.58 µs a time
 * here, this 0.74 (`node bench/record-json.mjs`). What a client or a mode
 * puts in a record goes through `JSON.stringify`. The status, the
 * timestamps and the event count are the gateway's own (`isoNow` writes
 * digits and `-:.TZ`), set here or read back from a record it wrote, so they
 * are written as they are: `JSON.stringify` of the three timestamps alone
 * cost 0.35 µs.
 */
export function encodeRecord (head: string, r: RunRecord): string {
  return `${head},"status":"${r.status}","created_at":"${r.created_at}"${stamp('started_at', r.started_at)}${stamp('ended_at', r.ended_at)}` +
    `${member('result', r.result)}${member('answer', r.answer)}${member('artifacts', r.artifacts)}${member('conversation_id', r.conversation_id)}${member('error', r.error)},"last_event_id":${r.last_event_id}}`
}

/** A timestamp member; a record of an older layout may lack it. */
function stamp (name: string, at: string | null | undefined): string {
  return at === undefined ? '' : at === null ? `,"${name}":null` : `,"${name}":"${at}"`
}

/** One member, or nothing when its value has no JSON (a mode that returned nothing; a record of an older layout). */
function member (name: string, value: unknown): string {
  if (value === null) return `,"${name}":null`
  const json = JSON.stringify(value) as string | undefined
  return json === undefined ? '' : `,"${name}":${json}`
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

/** The tenant at the head of every event `encodeEvent` writes, found without parsing the event. */
const TENANT = /^\{"id":"\d+","type":"[a-z_.]+","seq":\d+,"run_id":"(?:[^"\\]*)","tenant_id":"([^"\\]*)"/

/** The tenant an event of this harness names, or undefined for text it did not write. */
export function eventTenant (json: string): string | undefined {
  return TENANT.exec(json)?.[1]
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
