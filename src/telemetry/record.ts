import type { BusMessage } from '../bus/index.js'
import { compileSchema, errorMap, jsonTextProblems, labelProblem, REQUEST_ID } from '../validation/index.js'
import { assetTrackingSchema } from './schema.js'

export interface AssetTrackingData {
  asset_id: string
  timestamp: string
  [field: string]: unknown
}

export const validateRecord = compileSchema<AssetTrackingData>(assetTrackingSchema)

const EPOCH_SECONDS = /^\d{1,12}$/
const JSON_TYPE = /^application\/json\s*(;|$)/i

/** The headers asset track requires, as `key → message` in the spec's key form. */
export function headerErrors (headers: Readonly<Record<string, string>>): Record<string, string> {
  const errors: Record<string, string> = {}
  if (!JSON_TYPE.test(headers['content-type'] ?? '')) errors['contentType'] = 'must be application/json'
  const id = headers['x-request-id']
  if (id === undefined || id === '') errors['xRequestId'] = 'is required'
  else if (!REQUEST_ID.test(id)) errors['xRequestId'] = 'must be 1 to 200 visible ASCII characters'
  const ts = headers['x-request-timestamp']
  if (ts === undefined || ts === '') errors['xRequestTimestamp'] = 'is required'
  else if (!EPOCH_SECONDS.test(ts)) errors['xRequestTimestamp'] = 'must be Unix epoch seconds (an integer)'
  return errors
}

/**
 * Every problem with the request, or an empty map. `raw`, the bytes `record`
 * was parsed from, is checked for what the parsed value cannot show
 * (duplicated keys, numbers beyond JSON, nesting): the published message is
 * those bytes, so they must mean exactly what was validated.
 */
export function recordErrors (record: unknown, headers: Readonly<Record<string, string>>, raw?: Uint8Array): Record<string, string> {
  const errors = headerErrors(headers)
  if (raw !== undefined) {
    const problems = jsonTextProblems(raw, record)
    for (const key in problems) errors[key] ??= problems[key]!
  }
  if (!validateRecord(record)) {
    const problems = errorMap(validateRecord.errors)
    for (const key in problems) errors[key] ??= problems[key]!
  } else {
    const problem = labelProblem(record.asset_id)
    if (problem !== undefined) errors['assetId'] ??= problem
  }
  return errors
}

export const TELEMETRY_SCHEMA_HEADER = 'asset-tracking-data@1'

/**
 * The id consumers drop duplicates by: a record the client sends again (the
 * same X-Request-Id, after a 5xx that may have been written) gets the same
 * one. It is scoped by the tenant key (issuer and client_id), which cannot
 * hold a `/`, so no two clients, of one issuer or two, share an id.
 */
export function messageId (tenantKey: string, requestId: string): string {
  return `${tenantKey}/${requestId}`
}

/**
 * The bus message: the record exactly as received plus `client_id`,
 * `received_at` and `request_id`. The additions are spliced into the received
 * bytes rather than re-serialising the record, which keeps unknown fields and
 * number formatting byte-for-byte and saves a JSON.stringify per request.
 * That is safe because recordErrors refused every body whose bytes a consumer
 * could read differently from the value validated (duplicate keys, ±Infinity).
 */
export function toMessage (record: AssetTrackingData, raw: Buffer, clientId: string, requestId: string, receivedAt: string, tenantKey = clientId): BusMessage {
  const extra = { client_id: clientId, received_at: receivedAt, request_id: requestId }
  let value: string
  const end = raw.lastIndexOf(0x7d) // '}'
  if (end > 0 && !('client_id' in record) && !('received_at' in record) && !('request_id' in record)) {
    value = raw.toString('utf8', 0, end) + ',' + JSON.stringify(extra).slice(1)
  } else {
    value = JSON.stringify({ ...record, ...extra })
  }
  return { key: record.asset_id, value, headers: { 'x-request-id': requestId, 'client-id': clientId, schema: TELEMETRY_SCHEMA_HEADER, 'message-id': messageId(tenantKey, requestId) } }
}
