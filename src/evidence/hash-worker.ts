import { createHash } from 'node:crypto'
import type { MessagePort } from 'node:worker_threads'
import { createSHA256, type IHasher } from 'hash-wasm'

/**
 * One piscina task per media part: hashes the views that arrive on `port`
 * (then `null` at the end, or `'abort'`), answering each once it is hashed
 * so the sender may reuse the memory, and resolves the hex digest.
 * A task spends its life waiting on the port, so one worker runs many.
 */
export default function hashPart ({ port, algorithm = 'sha256' }: { port: MessagePort, algorithm?: 'sha256' | 'sha1' }): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash(algorithm)
    port.on('message', (bytes: Uint8Array | null | 'abort') => {
      if (bytes === 'abort') {
        port.close()
        reject(new Error('part abandoned'))
        return
      }
      if (bytes === null) {
        port.close()
        resolve(hash.digest('hex'))
        return
      }
      hash.update(bytes)
      port.postMessage(0)
    })
  })
}

let hasher: Promise<IHasher> | undefined

/**
 * One part of a resumable upload: the SHA-256 state saved after the parts
 * before it (none for the first), carried over `bytes`; the state to save,
 * and the hex digest when `final`. Node's hash cannot be saved and restored,
 * hash-wasm's can, so the hash of an upload goes on from any process.
 */
export async function resumeHash ({ state, bytes, final }: { state: Uint8Array | undefined, bytes: Uint8Array, final: boolean }): Promise<{ state: Uint8Array, digest: string | undefined }> {
  hasher ??= createSHA256()
  const hash = await hasher
  hash.init()
  if (state !== undefined) hash.load(state)
  hash.update(bytes)
  const saved = hash.save()
  return { state: saved, digest: final ? hash.digest('hex') : undefined }
}
