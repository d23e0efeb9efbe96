import { createHash } from 'node:crypto'
import type { MessagePort } from 'node:worker_threads'

/** Bytes hashed between acknowledgments to the main thread (its flow control). */
export const ACK_BYTES = 1024 * 1024

/**
 * One piscina task per media part: hashes chunks as they arrive on `port`
 * (ArrayBuffers, then `null` at the end, or `'abort'`) and resolves the hex SHA-256.
 * A task spends its life waiting on the port, so one worker runs many.
 */
export default function hashPart ({ port }: { port: MessagePort }): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256')
    let unacked = 0
    port.on('message', (chunk: ArrayBuffer | null | 'abort') => {
      if (chunk === 'abort') {
        port.close()
        reject(new Error('part abandoned'))
        return
      }
      if (chunk === null) {
        if (unacked > 0) port.postMessage(unacked)
        port.close()
        resolve(hash.digest('hex'))
        return
      }
      hash.update(new Uint8Array(chunk))
      unacked += chunk.byteLength
      if (unacked >= ACK_BYTES) {
        port.postMessage(unacked)
        unacked = 0
      }
    })
  })
}
