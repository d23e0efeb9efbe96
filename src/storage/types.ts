import { randomBytes } from 'node:crypto'
import type { PartStore } from './part-store.js'
import type { SlabPool } from './slabs.js'

/**
 * The process writing (its incarnation), and whether the writer of some
 * leftover still lives: partial files and recorded multipart uploads of a
 * live process, another worker on the same DATA_DIR, are not to be touched.
 */
export interface ProcessOwner {
  readonly id: string
  isAlive(id: string): boolean
}

/** For a store alone on its DATA_DIR: everything but its own is left over from an earlier run. */
export function soleOwner (): ProcessOwner {
  const id = `${process.pid}-${randomBytes(4).toString('hex')}`
  return { id, isAlive: other => other === id }
}

/**
 * An object's bytes in order. Each chunk is valid only until the next one is
 * asked for: sources may reuse their memory (the request body does), so a
 * consumer copies what it keeps.
 */
export type ByteSource = AsyncIterable<Uint8Array>

export interface StoredObject {
  key: string
  uri: string
  /** The backend's ETag; empty where the backend has none (fs). */
  etag: string
  size: number
}

export interface PutOptions {
  signal: AbortSignal
  /**
   * Whose upload this is: the slabs it takes count against that tenant's
   * share of the pool. Uploads without one share the tenant ''.
   */
  tenant?: string
  /**
   * Sees every byte of the object in order (the hash), from the slab it is
   * stored from; a slab is reused only once its promise settles.
   */
  observe?: (bytes: Uint8Array) => Promise<void>
  /**
   * Told when removing a failed object's remains fails too (storage
   * unreachable): something may be left behind. The put still fails with its
   * first error.
   */
  onCleanupError?: (err: Error) => void
}

/** The S3 store's record of multipart uploads (for metrics). */
export interface MultipartStats {
  /** Uploads being written now. */
  readonly inFlight: number
  /** Recorded uploads not in flight, waiting for the sweep to abort them. */
  readonly backlog: number
  /** Aborts tried again by the sweep. */
  readonly abortsRetried: number
  /** Recorded uploads dropped by the sweep without an id to abort (their create was never answered). */
  readonly unidentified: number
}

/** Where evidence objects live: a folder under DATA_DIR, or any S3 API. */
export interface ObjectStore {
  readonly kind: 'fs' | 's3'
  /** The memory every upload of this store draws from (for metrics). */
  readonly slabs: SlabPool
  readonly multipart?: MultipartStats
  /** Objects written part by part across requests (resumable uploads). */
  readonly parts: PartStore
  start(): Promise<void>
  /** Ends background work; call after the last upload has settled. */
  stop?(): Promise<void>
  probe(): Promise<void>
  /**
   * Streams `body` into the object `key`, through the store's shared slab
   * pool. On any failure (the body errors, `signal` aborts, the backend
   * fails) nothing is left behind: no partial file, no open multipart upload
   * (one whose abort fails is recorded and aborted later by the sweep).
   */
  put(key: string, body: ByteSource, contentType: string, options: PutOptions): Promise<StoredObject>
  delete(key: string): Promise<void>
  /** Removes every object under `prefix` (the objects of an attempt that died); how many. The S3 store only. */
  deletePrefix?(prefix: string): Promise<number>
}
