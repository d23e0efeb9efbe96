import type { RunEvent, RunEventName } from './types.js'

/**
 * Serialises an event once. `json` is exactly `JSON.stringify({ id, event, data })`
 * (event names need no escaping), built around `data`'s JSON so that text is
 * produced a single time and shared by the stored value, the SSE frame and
 * the bus message.
 */
export function encodeEvent (id: number, event: RunEventName, data: object): RunEvent {
  const dataJson = JSON.stringify(data)
  return { id, event, data: dataJson, json: `{"id":${id},"event":"${event}","data":${dataJson}}` }
}

/** The layout `encodeEvent` writes: `data` is everything between `"data":` and the closing brace. */
const STORED = /^\{"id":(\d+),"event":"([^"]+)","data":([\s\S]*)\}$/

/** Reads back an event stored as its `json`, without parsing `data`. */
export function decodeEvent (json: string): RunEvent {
  const m = STORED.exec(json)
  if (!m) throw new Error(`not a stored run event: ${json.slice(0, 80)}`)
  return { id: Number(m[1]), event: m[2] as RunEventName, data: m[3]!, json }
}

/** The `TOPIC_RUNS` message value, `{run_id, tenant_id, ...event}`: the event's JSON with the run's ids put in front. */
export function busValue (runId: string, tenantId: string, e: RunEvent): string {
  return `{"run_id":${JSON.stringify(runId)},"tenant_id":${JSON.stringify(tenantId)},${e.json.slice(1)}`
}

/** `text/event-stream` frame of an event, built once however many subscribers it goes to. */
export function formatEvent (e: RunEvent): string {
  e.frame ??= `id: ${e.id}\nevent: ${e.event}\ndata: ${e.data}\n\n`
  return e.frame
}
