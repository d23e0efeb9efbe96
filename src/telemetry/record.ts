import { isUtf8 } from 'node:buffer'
import type { BusMessage, OutgoingMessage } from '../bus/index.js'
import { compileBodyCheck, compileSchema, errorMap, jsonTextProblems, labelProblem, REQUEST_ID } from '../validation/index.js'
import { assetTrackingSchema } from './schema.js'

export interface AssetTrackingData {
  asset_id: string
  timestamp: string
  [field: string]: unknown
}

/** Members the gateway adds to the published record: one already in the body is overwritten. */
const ADDED = ['client_id', 'received_at', 'request_id']
const CLOSE_OBJECT = 0x7d

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
 * The checks of a record, compiled once for the `metrics.schema` values
 * this process accepts (TELEMETRY_METRICS_SCHEMAS).
 */
export interface RecordChecks {
  /**
   * Every problem with the request, or an empty map. `raw`, the bytes
   * `record` was parsed from, is checked for what the parsed value cannot
   * show (duplicated keys, numbers beyond JSON, nesting): the published
   * message is those bytes, so they must mean exactly what was validated.
   */
  recordErrors: (record: unknown, headers: Readonly<Record<string, string>>, raw?: Uint8Array) => Record<string, string>
  /** The problems of the record alone (a record of a batch, whose headers are the batch's). */
  bodyErrors: (record: unknown, raw?: Uint8Array) => Record<string, string>
  /**
   * The record's asset_id when the request is certainly valid, read from
   * the headers and the body's bytes without parsing them
   * (validation/byte-check.ts), and the body holds none of the members the
   * gateway adds, so spliceMessage can publish it. Undefined otherwise:
   * JSON.parse and recordErrors then decide, and name every problem.
   */
  acceptedAssetId: (headers: Readonly<Record<string, string>>, raw: Buffer) => string | undefined
  /** acceptedAssetId for the bytes of one record, headers aside. */
  acceptedRecordAssetId: (raw: Buffer) => string | undefined
}

export function recordChecks (metricsSchemas: readonly string[]): RecordChecks {
  const schema = assetTrackingSchema(metricsSchemas)
  const validateRecord = compileSchema<AssetTrackingData>(schema)
  const checkRecordBytes = compileBodyCheck(schema, ['asset_id', ...ADDED])

  function bodyErrors (record: unknown, raw?: Uint8Array): Record<string, string> {
    const errors: Record<string, string> = {}
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

  function acceptedRecordAssetId (raw: Buffer): string | undefined {
    const captured = checkRecordBytes(raw)
    if (captured === undefined) return undefined
    const assetId = captured['asset_id']
    if (typeof assetId !== 'string' || labelProblem(assetId) !== undefined) return undefined
    for (const key of ADDED) if (key in captured) return undefined
    return assetId
  }

  return {
    recordErrors (record, headers, raw) {
      const errors = headerErrors(headers)
      const problems = bodyErrors(record, raw)
      for (const key in problems) errors[key] ??= problems[key]!
      return errors
    },
    bodyErrors,
    acceptedAssetId (headers, raw) {
      const assetId = acceptedRecordAssetId(raw)
      if (assetId === undefined || Object.keys(headerErrors(headers)).length > 0) return undefined
      return assetId
    },
    acceptedRecordAssetId
  }
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

/** Who sent a record and when: what the gateway adds to it. */
export interface Receipt { clientId: string, requestId: string, receivedAt: string, tenantKey: string }

/**
 * The bus message: the record exactly as received plus `client_id`,
 * `received_at` and `request_id`. The additions are spliced into the received
 * text (`text`, the body json() parsed) rather than re-serialising the record,
 * which keeps unknown fields and number formatting byte-for-byte and saves a
 * JSON.stringify per request. That is safe because recordErrors refused every
 * body whose bytes a consumer could read differently from the value validated
 * (duplicate keys, ±Infinity). A body that already has one of those members
 * is re-serialised, so that the gateway's value is the only one.
 */
export function toMessage (record: AssetTrackingData, text: string, receipt: Receipt): BusMessage {
  if (ADDED.some(key => key in record)) {
    const value = JSON.stringify({ ...record, client_id: receipt.clientId, received_at: receipt.receivedAt, request_id: receipt.requestId })
    return message(record.asset_id, value, receipt)
  }
  return textMessage(record.asset_id, text, receipt)
}

/**
 * The same message from the bytes of a valid record that holds none of the
 * added members: the bytes as received, then the additions (a Splice, so
 * that no buffer is made for it). Valid UTF-8 decodes and encodes back to
 * the same bytes, so this publishes what toMessage would, without decoding
 * the body or encoding it again. A body that is not UTF-8 (a stray byte in
 * a string the schema does not read) goes through its text, with the
 * replacement characters JSON.parse saw.
 */
export function spliceMessage (assetId: string, raw: Buffer, receipt: Receipt): OutgoingMessage {
  if (!isUtf8(raw)) return textMessage(assetId, raw.toString(), receipt)
  return message(assetId, { bytes: raw, end: raw.lastIndexOf(CLOSE_OBJECT), tail: addedMembers(receipt) }, receipt)
}

function textMessage (assetId: string, text: string, receipt: Receipt): BusMessage {
  return message(assetId, text.slice(0, text.lastIndexOf('}')) + addedMembers(receipt), receipt)
}

/** The members the gateway adds, and the record's closing brace. */
function addedMembers ({ clientId, receivedAt, requestId }: Receipt): string {
  return `,"client_id":${JSON.stringify(clientId)},"received_at":${JSON.stringify(receivedAt)},"request_id":${JSON.stringify(requestId)}}`
}

function message<V extends OutgoingMessage['value']> (assetId: string, value: V, { clientId, requestId, tenantKey }: Receipt): { key: string, value: V, headers: Record<string, string> } {
  return { key: assetId, value, headers: { 'x-request-id': requestId, 'client-id': clientId, schema: TELEMETRY_SCHEMA_HEADER, 'message-id': messageId(tenantKey, requestId) } }
}
