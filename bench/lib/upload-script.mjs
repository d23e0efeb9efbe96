// What the evidence scenario's upload scripts (the client through the
// gateway, the direct lib-storage uploader) share: their JSON argument and
// the timing of N uploads of one file at once.
import { statSync } from 'node:fs'
import { randomBytes } from 'node:crypto'

/**
 * The script's configuration (its one JSON argument) with `required` keys,
 * and the media file's size, checked against `size` when given.
 */
export function uploadConfig (name, required) {
  const cfg = JSON.parse(process.argv[2] ?? '{}')
  for (const k of required) if (cfg[k] === undefined) throw new Error(`${name}: missing ${k}`)
  const size = statSync(cfg.file).size
  if (cfg.size !== undefined && cfg.size !== size) throw new Error(`${name}: ${cfg.file} has ${size} bytes, expected ${cfg.size}`)
  return { cfg, size, timeoutMs: cfg.timeoutMs ?? 300000, runId: cfg.runId ?? randomBytes(4).toString('hex') }
}

/** Seconds since a process.hrtime.bigint() reading. */
export const secondsSince = t0 => Number(process.hrtime.bigint() - t0) / 1e9

/**
 * `concurrency` uploads of `size` bytes at once (`upload(i, t0)` each, never
 * rejecting): { seconds, bytes, mbPerSec, uploads, cpuSeconds } over them.
 */
export async function timeUploads (concurrency, size, upload) {
  const cpu0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  const uploads = await Promise.all(Array.from({ length: concurrency }, (_, i) => upload(i, t0)))
  const seconds = secondsSince(t0)
  const cpu = process.cpuUsage(cpu0)
  const bytes = size * concurrency
  return { seconds, bytes, mbPerSec: bytes / seconds / 1e6, uploads, cpuSeconds: (cpu.user + cpu.system) / 1e6 }
}
