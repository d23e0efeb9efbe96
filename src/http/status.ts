import { STATUS_CODES } from 'node:http'

const lines = new Map<number, string>()

/** "404 Not Found", cached: uWS wants the whole status line. */
export function statusLine (status: number): string {
  let line = lines.get(status)
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? (status === 499 ? 'Client Closed Request' : 'Unknown')}`
    lines.set(status, line)
  }
  return line
}
