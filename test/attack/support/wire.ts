import { connect } from 'node:net'

/**
 * HTTP/1.1 written and read byte for byte: the attack suite sends what fetch
 * would refuse or normalise (duplicate and hostile headers, broken framing,
 * bodies that lie about their length), and must tell an answer from a hang
 * and from a connection closed without one.
 */

export type Header = readonly [name: string, value: string | Buffer]

export interface RawRequest {
  method: string
  /** The request target as it goes on the wire: `..`, `%2f` and all. */
  target: string
  /** In order; nothing is added but `Host` (unless given) and `Content-Length` (unless a length or chunked framing is given). */
  headers?: readonly Header[]
  body?: Buffer | string
  /** Send the body as these chunks with `Transfer-Encoding: chunked` instead of a Content-Length. */
  chunks?: ReadonlyArray<Buffer | string>
}

export interface Answer {
  kind: 'answer'
  status: number
  headers: Record<string, string>
  text: string
  /** The body as JSON, or undefined when it is not JSON. */
  json: unknown
}

export interface NoAnswer {
  kind: 'closed' | 'hang'
  /** Whatever arrived before the close or the bound. */
  partial: string
}

export type Outcome = Answer | NoAnswer

const CRLF = '\r\n'

/** The request's bytes. */
export function encode (req: RawRequest): Buffer {
  const headers = [...(req.headers ?? [])]
  const has = (name: string): boolean => headers.some(([n]) => n.toLowerCase() === name)
  if (!has('host')) headers.unshift(['Host', '127.0.0.1'])
  const body = req.body === undefined ? undefined : Buffer.from(req.body)
  let payload: Buffer = Buffer.alloc(0)
  if (req.chunks !== undefined) {
    if (!has('transfer-encoding')) headers.push(['Transfer-Encoding', 'chunked'])
    payload = Buffer.concat([...req.chunks.map(c => Buffer.from(c)).filter(c => c.length > 0).map(c => Buffer.concat([Buffer.from(c.length.toString(16) + CRLF), c, Buffer.from(CRLF)])), Buffer.from(`0${CRLF}${CRLF}`)])
  } else if (body !== undefined) {
    if (!has('content-length')) headers.push(['Content-Length', String(body.length)])
    payload = body
  }
  const head = Buffer.concat([
    Buffer.from(`${req.method} ${req.target} HTTP/1.1${CRLF}`, 'latin1'),
    ...headers.map(([n, v]) => Buffer.concat([Buffer.from(`${n}: `, 'latin1'), Buffer.isBuffer(v) ? v : Buffer.from(v, 'latin1'), Buffer.from(CRLF)])),
    Buffer.from(CRLF)
  ])
  return Buffer.concat([head, payload])
}

/**
 * Sends `bytes` on a fresh connection and reads one answer: a status line,
 * headers, and a body of its Content-Length or chunked framing (an event
 * stream counts as answered once its head has come). Bounded by
 * `timeoutMs`: past it the outcome is a `hang`.
 */
export function exchange (port: number, bytes: Buffer, timeoutMs = 15_000, headOnly = false, localAddress?: string): Promise<Outcome> {
  return new Promise(resolve => {
    const socket = connect({ port, host: '127.0.0.1', ...(localAddress === undefined ? {} : { localAddress }) })
    let received = Buffer.alloc(0)
    let settled = false
    const finish = (outcome: Outcome): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(outcome)
    }
    const timer = setTimeout(() => finish({ kind: 'hang', partial: received.toString('latin1').slice(0, 500) }), timeoutMs)
    socket.on('error', () => undefined)
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d])
      const answer = parseAnswer(received, false, headOnly)
      if (answer) finish(answer)
    })
    socket.on('close', () => finish(parseAnswer(received, true, headOnly) ?? { kind: 'closed', partial: received.toString('latin1').slice(0, 500) }))
    // Written whole and never half-closed: uWS takes a half-closed socket for a client that left.
    socket.write(bytes)
  })
}

/**
 * One complete answer in `data`, or undefined while it is incomplete
 * (`ended`: the peer closed, so a body without framing ends here;
 * `headOnly`: the answer to a HEAD request, which has no body).
 */
export function parseAnswer (data: Buffer, ended = false, headOnly = false): Answer | undefined {
  const end = data.indexOf('\r\n\r\n')
  if (end < 0) return undefined
  const lines = data.subarray(0, end).toString('latin1').split(CRLF)
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')
  if (!status) return undefined
  // An interim answer (`100 Continue`, which uWS sends itself) precedes the real one.
  if (status[1]!.startsWith('1')) return parseAnswer(data.subarray(end + 4), ended, headOnly)
  const headers: Record<string, string> = {}
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const rest = data.subarray(end + 4)
  let body: Buffer | undefined
  if (headOnly || /^text\/event-stream/i.test(headers['content-type'] ?? '')) {
    body = rest
  } else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length'])
    if (rest.length >= length) body = rest.subarray(0, length)
  } else if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    body = dechunk(rest)
  } else if (ended) body = rest
  if (body === undefined) return ended ? { kind: 'answer', status: Number(status[1]), headers, text: rest.toString('utf8'), json: undefined } : undefined
  const text = body.toString('utf8')
  let json: unknown
  try { json = JSON.parse(text) } catch { json = undefined }
  return { kind: 'answer', status: Number(status[1]), headers, text, json }
}

/** A chunked body once its last chunk has come, else undefined. */
function dechunk (data: Buffer): Buffer | undefined {
  const out: Buffer[] = []
  let at = 0
  while (true) {
    const lineEnd = data.indexOf(CRLF, at)
    if (lineEnd < 0) return undefined
    const size = parseInt(data.subarray(at, lineEnd).toString('latin1'), 16)
    if (Number.isNaN(size)) return undefined
    if (size === 0) return Buffer.concat(out)
    if (data.length < lineEnd + 2 + size + 2) return undefined
    out.push(data.subarray(lineEnd + 2, lineEnd + 2 + size))
    at = lineEnd + 2 + size + 2
  }
}

/** `exchange` for a request given as parts. */
export function send (port: number, req: RawRequest, timeoutMs?: number): Promise<Outcome> {
  return exchange(port, encode(req), timeoutMs, req.method === 'HEAD')
}
