// Media files for upload scenarios: random bytes (nothing on the way can
// compress them), made once and kept for later runs.
import { closeSync, existsSync, mkdirSync, openSync, renameSync, statSync, statfsSync, writeSync } from 'node:fs'
import { randomFillSync } from 'node:crypto'
import { join } from 'node:path'

const CHUNK = 4 * 1024 * 1024

/** `dir`/<bytes>.bin of `bytes` random bytes, written unless already there: { file, made }. */
export function testFile (dir, bytes, log) {
  mkdirSync(dir, { recursive: true })
  const file = join(dir, `${bytes}.bin`)
  if (existsSync(file) && statSync(file).size === bytes) return { file, made: false }
  log(`  writing ${bytes} random bytes to ${file} (once; later runs reuse it)`)
  const tmp = `${file}.tmp-${process.pid}`
  const fd = openSync(tmp, 'w')
  try {
    const chunk = Buffer.allocUnsafe(CHUNK)
    for (let left = bytes; left > 0;) {
      const n = Math.min(left, chunk.length)
      randomFillSync(chunk, 0, n)
      writeSync(fd, chunk, 0, n)
      left -= n
    }
  } finally {
    closeSync(fd)
  }
  renameSync(tmp, file)
  return { file, made: true }
}

/** Bytes free for an unprivileged user on the file system of `dir`, or undefined. */
export function freeBytes (dir) {
  try { const s = statfsSync(dir); return s.bavail * s.bsize } catch { return undefined }
}
