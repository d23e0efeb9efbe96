import type { Socket } from 'node:net'
import { BOUNDARY } from './multipart.js'
import { rawConnect, readResponse } from './http.js'

export interface RawResponse { status: number, headers: Record<string, string>, body: any }

/**
 * An evidence upload over a raw socket that sends only the first `sent`
 * bytes of `body` (a client on a slow link, or one that stalls), so the test
 * decides when, or whether, the rest follows. `response` settles when the
 * server answers and closes, or the socket closes without an answer (status 0).
 */
export async function partialUpload (port: number, token: string, body: Buffer, sent: number): Promise<{ socket: Socket, response: Promise<RawResponse>, sendRest: () => void }> {
  const socket = await rawConnect(port)
  socket.on('error', () => undefined)
  const response = readResponse(socket, COMPLETE).then(parseResponse)
  socket.write(`POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\n\r\n`)
  socket.write(body.subarray(0, sent))
  return { socket, response, sendRest: () => { socket.write(body.subarray(sent)) } }
}

/** A whole response: its head, and a body as long as its Content-Length. */
const COMPLETE = { test: (text: string): boolean => {
  const end = text.indexOf('\r\n\r\n')
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))
  return end >= 0 && length !== null && Buffer.byteLength(text.slice(end + 4)) >= Number(length[1])
} } as RegExp

export function parseResponse (text: string): RawResponse {
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) return { status: 0, headers: {}, body: undefined }
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n')
  const headers = Object.fromEntries(lines.map(l => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  const rest = text.slice(end + 4)
  return { status: Number(statusLine!.split(' ')[1]), headers, body: rest ? JSON.parse(rest) : undefined }
}

/** Rejects with a clear message if `work` has not settled within `ms`: a hang is a failure, not a stuck test. */
export function within<T> (work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms) })
  return Promise.race([work, bound]).finally(() => clearTimeout(timer))
}

/** A gauge or counter from `/metrics`; NaN when it is not there. */
export async function metric (url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const line = text.split('\n').find(l => l.startsWith(`${name} `))
  return line === undefined ? Number.NaN : Number(line.slice(name.length + 1))
}
