import { createHash } from 'node:crypto'
import type { MessagePort } from 'node:worker_threads'

/**
 * One piscina task per media part: hashes the views that arrive on `port`
 * (then `null` at the end, or `'abort'`), answering each once it is hashed
 * so the sender may reuse the memory, and resolves the hex SHA-256.
 * A task spends its life waiting on the port, so one worker runs many.
 */
export default function hashPart ({ port }: { port: MessagePort }): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256')
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
