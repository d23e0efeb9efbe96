import { STATUS_CODES } from 'node:http'

const lines = new Map<number, string>()
/** Statuses node does not name: nginx's 499 (our log's), tus's 460. */
const EXTRA: Readonly<Record<number, string>> = { 460: 'Checksum Mismatch', 499: 'Client Closed Request' }

/** "404 Not Found", cached: uWS wants the whole status line. */
export function statusLine (status: number): string {
  let line = lines.get(status)
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? (EXTRA[status] ?? 'Unknown')}`
    lines.set(status, line)
  }
  return line
}
