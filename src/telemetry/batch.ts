import type { OutgoingMessage } from '../bus/index.js'
import { GatewayError } from '../errors.js'
import { errorBody } from '../http/index.js'
import { spliceMessage, toMessage, type AssetTrackingData, type Receipt, type RecordChecks } from './record.js'

/**
 * One record of a batch or a stream, from its bytes: its bus message, or the
 * error a one-record request with these bytes would be answered with (the
 * same checks, in the same order, so the same field-keyed errors).
 */
export function recordMessage (checks: RecordChecks, bytes: Buffer, receipt: Receipt, maxBytes: number): OutgoingMessage | GatewayError {
  if (bytes.length > maxBytes) return recordTooLarge(maxBytes)
  const assetId = checks.acceptedRecordAssetId(bytes)
  if (assetId !== undefined) return spliceMessage(assetId, bytes, receipt)
  const text = bytes.toString('utf8')
  let record: unknown
  try {
    record = JSON.parse(text)
  } catch {
    return new GatewayError('invalid_json', 'request body is not valid JSON', { details: { body: 'must be valid JSON' } })
  }
  const errors = checks.bodyErrors(record, bytes)
  if (Object.keys(errors).length > 0) return new GatewayError('validation_error', 'Validation failed', { details: errors })
  return toMessage(record as AssetTrackingData, text, receipt)
}

export function recordTooLarge (maxBytes: number): GatewayError {
  return new GatewayError('payload_too_large', `record exceeds ${maxBytes} bytes`, { details: { body: `must not exceed ${maxBytes} bytes` } })
}

/**
 * The request id of a record of a batch or stream: the id of its batch
 * request (or stream) and its index (or sequence number). A client that
 * sends the same batch again with the same X-Request-Id, or resumes a
 * stream with the same stream id and sequence numbers, gives each copy
 * the same id, and so the same `message-id` to drop duplicates by.
 */
export function recordRequestId (requestId: string, index: number): string {
  return `${requestId}#${index}`
}

/** A record's line in a batch answer: its index, then the body a one-record request would get. */
export function resultText (index: number, err: GatewayError | undefined): string {
  if (err === undefined) return `{"index":${index},"status":"accepted"}`
  return JSON.stringify({ index, ...errorBody('telemetry', err) as object })
}

/**
 * The answer to a batch once every record has its result (OTLP's rule for a
 * partial success): 200 when any record was accepted, `partial_success`
 * when not all were; when none was, the status a one-record request would
 * get: 400 when every record was invalid, else the first server error's
 * (500, 503), which a client retries.
 */
export function batchAnswer (results: readonly string[], failures: readonly GatewayError[]): { status: number, body: string, headers: Record<string, string> } {
  const accepted = results.length - failures.length
  const list = results.join(',')
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (accepted > 0) {
    const status = failures.length === 0 ? 'success' : 'partial_success'
    return { status: 200, headers, body: `{"status":"${status}","message":"${accepted} of ${results.length} records published","accepted":${accepted},"rejected":${failures.length},"results":[${list}]}` }
  }
  const server = failures.find(f => f.status >= 500)
  if (server !== undefined) {
    Object.assign(headers, server.headers)
    return { status: server.status, headers, body: `{"status":"error","message":${JSON.stringify(server.message)},"accepted":0,"rejected":${failures.length},"results":[${list}]}` }
  }
  return { status: 400, headers, body: `{"status":"validation_error","message":"no record is valid","accepted":0,"rejected":${failures.length},"results":[${list}]}` }
}
