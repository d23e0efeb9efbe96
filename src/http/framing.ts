import { GatewayError } from '../errors.js'
import { TENANT_HEADER } from '../harness-api/index.js'

/**
 * Headers a request may carry at most once. uWS hands every copy to
 * JavaScript but reads only the first itself (the body's length among them),
 * while a header object keeps the last: two copies that differ make the
 * gateway and whatever sits in front of it disagree about the request.
 */
export const SINGLE_VALUED: ReadonlySet<string> = new Set([
  'content-length', 'transfer-encoding', 'authorization', 'host',
  TENANT_HEADER, 'x-request-id', 'content-type', 'last-event-id'
])

/**
 * The most a header block (request line to the blank line) may take. It is
 * uWS's buffer for a block that arrives in more than one read, fixed in this
 * build (UWS_HTTP_MAX_HEADERS_SIZE is not read): past it uWS drops the
 * connection without an answer, but a larger block that arrives in one read
 * is parsed. Holding every block to it makes the outcome independent of how
 * the network split the bytes.
 */
export const MAX_HEADER_BYTES = 4096

/** " HTTP/1.1\r\n" and the space after the method, then the blank line. */
const REQUEST_LINE_BYTES = 12
const BLANK_LINE_BYTES = 2
/** ": " and "\r\n" around each header. */
export const HEADER_LINE_BYTES = 4

const DIGITS = /^\d{1,15}$/

export interface HeaderIssue {
  readonly error: GatewayError
  /**
   * The body's length is in doubt, so no byte after the headers can be
   * trusted: answer without reading on, and close.
   */
  readonly framing: boolean
}

/** Bytes of the request line and the blank line, as the header count starts. */
export function requestLineBytes (method: string, path: string, query: string): number {
  return method.length + path.length + (query === '' ? 0 : query.length + 1) + REQUEST_LINE_BYTES + BLANK_LINE_BYTES
}

/**
 * What is wrong with a request's headers, once uWS has parsed them:
 * `duplicate` is the first single-valued header seen twice, `bytes` the size
 * of the header block.
 */
export function headerIssue (headers: Readonly<Record<string, string>>, duplicate: string | undefined, bytes: number): HeaderIssue | undefined {
  if (duplicate === 'content-length' || duplicate === 'transfer-encoding') return framing(duplicate, `${duplicate} sent more than once`)
  const te = headers['transfer-encoding']
  const cl = headers['content-length']
  if (te !== undefined) {
    // uWS closes the connection on both together before any handler runs; kept for a build that does not.
    if (cl !== undefined) return framing('transfer-encoding', 'must not come with content-length')
    // uWS reads any value containing "chunked" as chunked; a coding we do not decode leaves the body unframed.
    if (te.toLowerCase() !== 'chunked') return framing('transfer-encoding', 'only chunked is accepted')
  }
  if (cl !== undefined && !DIGITS.test(cl)) return framing('content-length', 'must be a decimal number of bytes')
  if (duplicate !== undefined) {
    return { framing: false, error: new GatewayError('malformed_request', `the ${duplicate} header was sent more than once`, { details: { [duplicate]: 'must be sent once' } }) }
  }
  if (bytes > MAX_HEADER_BYTES) {
    return { framing: false, error: new GatewayError('header_fields_too_large', `the header block exceeds ${MAX_HEADER_BYTES} bytes`, { details: { headers: `must not exceed ${MAX_HEADER_BYTES} bytes` } }) }
  }
  return undefined
}

function framing (header: string, message: string): HeaderIssue {
  return { framing: true, error: new GatewayError('malformed_request', `${header} ${message}`, { details: { [header]: message } }) }
}
