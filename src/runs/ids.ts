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

const RUN_ID = /^run-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** Whether `id` has the form of the ids this harness gives runs (`run-` and a UUIDv7). */
export function isRunId (id: string): boolean {
  return RUN_ID.test(id)
}
