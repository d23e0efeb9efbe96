/** The smallest chunk buffer; sizes are powers of two so that a buffer fits the chunks that follow. */
const MIN_CHUNK_BYTES = 16 * 1024

/**
 * Buffers for the chunks of streamed request bodies, shared by every body of
 * the process and bounded in bytes.
 *
 * A body queues chunks while its reader is busy, so a new upload needs a few
 * buffers at once. Allocated per body, they lived as long as the upload,
 * were promoted, and waited as garbage for the next mark-compact, which
 * external memory alone triggers only every ~64 MiB: each 256 MB upload left
 * about 1.3 MiB behind, and the idle RSS grew round after round of uploads
 * (`BENCH_EVIDENCE_REPEAT=8 npm run bench evidence` reports it). From a
 * shared pool the next body takes them back.
 */
export class ChunkPool {
  private readonly free = new Map<number, ArrayBuffer[]>()
  private held = 0

  constructor (private readonly maxBytes: number) {}

  /** Bytes of the idle buffers it keeps. */
  get bytes (): number {
    return this.held
  }

  /** A buffer of at least `size` bytes: an idle one of its size class, or a new one. */
  take (size: number): ArrayBuffer {
    const length = 2 ** Math.ceil(Math.log2(Math.max(size, MIN_CHUNK_BYTES)))
    const buffer = this.free.get(length)?.pop()
    if (buffer === undefined) return new ArrayBuffer(length)
    this.held -= length
    return buffer
  }

  /** A buffer no longer read; kept for reuse while the pool has room, else left to the GC. */
  give (buffer: ArrayBuffer): void {
    if (this.held + buffer.byteLength > this.maxBytes) return
    const list = this.free.get(buffer.byteLength)
    if (list) list.push(buffer)
    else this.free.set(buffer.byteLength, [buffer])
    this.held += buffer.byteLength
  }
}
