import { Writable } from 'node:stream'
import { MessageChannel } from 'node:worker_threads'
import { Piscina } from 'piscina'

/** Bytes sent to a worker but not yet hashed before writes wait (per part). */
const MAX_OUTSTANDING = 8 * 1024 * 1024

/**
 * SHA-256 off the event loop: a pool of worker threads, one task per media
 * part, fed chunk by chunk over a MessagePort as the part streams in.
 */
export class HashPool {
  private readonly pool: Piscina

  constructor (threads: number) {
    const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
    this.pool = new Piscina({
      filename: new URL(`./hash-worker${ext}`, import.meta.url).href,
      minThreads: 1,
      maxThreads: threads,
      concurrentTasksPerWorker: 16,
      idleTimeout: 30_000
    })
  }

  /** A Writable that hashes what is written to it; `digest` settles after it finishes. */
  stream (): HashStream {
    return new HashStream(this.pool)
  }

  async close (): Promise<void> {
    await this.pool.destroy()
  }
}

export class HashStream extends Writable {
  readonly digest: Promise<string>
  private readonly port
  private outstanding = 0
  private waiting: (() => void) | undefined
  private ended = false

  constructor (pool: Piscina) {
    super({ highWaterMark: 1024 * 1024 })
    const { port1, port2 } = new MessageChannel()
    this.port = port1
    this.digest = pool.run({ port: port2 }, { transferList: [port2] }) as Promise<string>
    this.digest.catch(() => undefined)
    port1.on('message', (hashed: number) => {
      this.outstanding -= hashed
      if (this.waiting && this.outstanding < MAX_OUTSTANDING) {
        const resume = this.waiting
        this.waiting = undefined
        resume()
      }
    })
  }

  override _write (chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    // A copy of exactly these bytes, transferred: cloning `chunk` would copy
    // the whole ArrayBuffer it is a slice of.
    const copy = new ArrayBuffer(chunk.byteLength)
    new Uint8Array(copy).set(chunk)
    this.port.postMessage(copy, [copy])
    this.outstanding += chunk.byteLength
    if (this.outstanding < MAX_OUTSTANDING) callback()
    else this.waiting = () => callback()
  }

  override _final (callback: (error?: Error | null) => void): void {
    this.ended = true
    this.port.postMessage(null)
    this.digest.then(() => callback(), callback)
  }

  /** An abandoned part ends its worker task too, or the task would wait forever. */
  override _destroy (error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.ended) this.port.postMessage('abort')
    this.port.close()
    callback(error)
  }

}
