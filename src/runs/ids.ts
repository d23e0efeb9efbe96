import { randomUUID } from 'node:crypto'

/**
 * A UUIDv7 (RFC 9562): 48 bits of Unix time in ms, the version, then 74
 * random bits (taken from a v4, which already carries the RFC variant).
 * Later ids sort after earlier ones, so the runs and their events are
 * appended at the end of LMDB's B-trees instead of all over them.
 */
export function uuidv7 (now = Date.now()): string {
  const time = now.toString(16).padStart(12, '0')
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randomUUID().slice(15)}`
}
