import { rawConnect, readResponse } from './http.js'

export interface RawAnswer {
  status: number
  /** Status line and headers, as sent. */
  head: string
  body: string
}

/**
 * One HTTP/1.1 request written byte for byte, for what fetch would
 * normalise away: `..` and `%2e%2e` segments, backslashes, a repeated or
 * padded header. `headers` are raw lines without the CRLF.
 */
export async function rawRequest (port: number, method: string, target: string, headers: string[] = [], body = ''): Promise<RawAnswer> {
  const socket = await rawConnect(port)
  const head = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...headers]
  if (body !== '' || method === 'POST') head.push('Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`)
  const answer = readResponse(socket)
  // Not end(): uWS takes a half-closed socket for a client that left, and aborts the request.
  socket.write(`${head.join('\r\n')}\r\n\r\n${body}`)
  const text = await answer
  socket.destroy()
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0)
  const end = text.indexOf('\r\n\r\n')
  return { status, head: text.slice(0, end), body: text.slice(end + 4) }
}
