import { MessageChannel, type MessagePort } from 'node:worker_threads'
import { Piscina } from 'piscina'

/**
 * SHA-256 off the event loop: a pool of worker threads, one task per media
 * part, fed over a MessagePort as the part is stored. The bytes are views of
 * the storage slabs, which live in SharedArrayBuffers, so a worker reads them
 * in place rather than receiving a copy.
 */
export class HashPool {
  private readonly pool: Piscina

  constructor (threads: number) {
    const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
    this.pool = new Piscina({
      filename: new URL(`./hash-worker${ext}`, import.meta.url).href,
      minThreads: 0,
      maxThreads: threads,
      // A task is a part being uploaded, mostly idle on its port. A part whose
      // task sat in piscina's queue would hold its slab unhashed, and enough
      // such parts could starve the uploads whose tasks run: so the limit is
      // far above any realistic number of concurrent parts.
      concurrentTasksPerWorker: 4096,
      idleTimeout: 30_000,
      // A worker allocates a message per slab and nothing else; V8's default
      // young generation (up to 32 MiB) would only grow into memory it never needs.
      resourceLimits: { maxYoungGenerationSizeMb: 2 }
    })
  }

  /** A hash in progress: `update` in order, then `digest` once. */
  start (algorithm: 'sha256' | 'sha1' = 'sha256'): HashTask {
    return new HashTask(this.pool, algorithm)
  }

  /**
   * The SHA-256 of a resumable upload, one part further: from the `state`
   * saved after the parts before (none for the first), over `bytes` (a
   * slab, read in place); the state to save, and the hex digest when `final`.
   */
  resume (state: Uint8Array | undefined, bytes: Uint8Array, final: boolean): Promise<{ state: Uint8Array, digest: string | undefined }> {
    return this.pool.run({ state, bytes, final }, { name: 'resumeHash' }) as Promise<{ state: Uint8Array, digest: string | undefined }>
  }

  async close (): Promise<void> {
    await this.pool.destroy()
  }
}

export class HashTask {
  private readonly port: MessagePort
  private readonly result: Promise<string>
  /** One per update not yet hashed, in order: the worker answers each in turn. */
  private readonly hashed: Array<{ resolve: () => void, reject: (err: Error) => void }> = []
  private finished = false

  constructor (pool: Piscina, algorithm: 'sha256' | 'sha1') {
    const { port1, port2 } = new MessageChannel()
    this.port = port1
    this.result = pool.run({ port: port2, algorithm }, { transferList: [port2] }) as Promise<string>
    this.result.catch(err => { for (const h of this.hashed.splice(0)) h.reject(err) })
    port1.on('message', () => { this.hashed.shift()?.resolve() })
  }

  /** Resolves once the worker has hashed `bytes`: from then on the caller may reuse them. */
  update (bytes: Uint8Array): Promise<void> {
    if (this.finished) return Promise.reject(new Error('hash already finished'))
    return new Promise((resolve, reject) => {
      this.hashed.push({ resolve, reject })
      this.port.postMessage(bytes)
    })
  }

  /** The hex SHA-256 of everything updated. */
  digest (): Promise<string> {
    this.finished = true
    this.port.postMessage(null)
    return this.result.finally(() => this.port.close())
  }

  /** An abandoned part ends its worker task too, or the task would wait forever. */
  abandon (): void {
    if (this.finished) return
    this.finished = true
    this.port.postMessage('abort')
    this.port.close()
  }
}
