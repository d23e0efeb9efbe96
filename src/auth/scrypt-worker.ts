import { hashSecretSync, verifySecretSync } from './secrets.js'

export type ScryptTask =
  | { op: 'hash', secret: string }
  | { op: 'verify', stored: string, secret: string }

/** One piscina task: a scrypt hash or check, on this worker's own thread. */
export default function scryptTask (task: ScryptTask): string | boolean {
  return task.op === 'hash' ? hashSecretSync(task.secret) : verifySecretSync(task.stored, task.secret)
}
