/**
 * The state of one resumable upload, kept where every process of the
 * service reads it (LMDB on one node, the shared bucket in a cluster) and
 * only ever replaced by a writer that read its current version.
 */
export interface UploadRecord {
  id: string
  /** The uploader's tenant key: no other tenant sees the upload. */
  tenant: string
  /** Upload-Length. */
  length: number
  /** Bytes stored and hashed: the whole parts, then the tail's. */
  offset: number
  /** Bytes of each part but the last, fixed at creation (S3_PART_SIZE then). */
  part_size: number
  content_type: string
  /** Upload-Metadata as received, for HEAD. */
  metadata?: string
  /** Where the object goes, and the handle of its parts in progress (an S3 upload id). */
  key: string
  handle: string
  /** ETag of each stored part, part n at n - 1. */
  parts: string[]
  /**
   * The bytes past the whole parts (fewer than a part), kept by the store
   * under `name` until the part they begin is stored: the tail a record
   * names is the upload's, any other is left over.
   */
  tail?: { name: string, bytes: number }
  /** The SHA-256 of the first `offset` bytes (the tail's too), in progress (hash-wasm's saved state, base64). */
  hash_state?: string
  created_at: number
  expires_at: number
  state: 'open' | 'complete' | 'committed' | 'expired'
  /** Once complete. */
  sha256?: string
  uri?: string
  etag?: string
  /** The idempotency key of the event that committed it. */
  committed_to?: string
  /**
   * The PATCH writing it: its process (incarnation), a token of its own, and
   * the process's kernel, pid and start, so a process on the same machine
   * asks the kernel whether the holder still runs.
   */
  lock?: { owner: string, token: string, pid?: number, host?: string, proc_start?: string }
}

export interface Versioned {
  record: UploadRecord
  /** The store's version, for a conditional replace. */
  version: string
}

/** Where records live; `replace` succeeds only on the version read. */
export interface UploadStates {
  /**
   * Whether processes of other DATA_DIRs (other nodes) write here too. If
   * not, every writer registers its incarnation where this process reads
   * it, and one not registered, or registered and dead, is gone.
   */
  readonly shared: boolean
  get(tenant: string, id: string): Promise<Versioned | undefined>
  /** Fails if the id exists (ids are random: it never does). */
  create(record: UploadRecord): Promise<string>
  /** The new version, or undefined when the record changed or is gone. */
  replace(record: UploadRecord, version: string): Promise<string | undefined>
  delete(tenant: string, id: string): Promise<void>
  /** The records of `tenant`, or of everyone; only those whose id `pick` takes, when given. */
  list(tenant?: string, pick?: (id: string) => boolean): Promise<Versioned[]>
  /** Ms since the record was last written, on the store's clock. */
  ageMs(tenant: string, id: string): Promise<number | undefined>
}

/**
 * An upload id: its Upload-Expires in epoch seconds (8 hex digits), then 96
 * random bits (24 hex digits). The sweep tells an expired upload from its
 * key alone, without reading every record of the cluster each round.
 */
export function uploadId (expiresAt: number, random: Buffer): string {
  return Math.floor(expiresAt / 1000).toString(16).padStart(8, '0') + random.toString('hex', 0, 12)
}

/** The Upload-Expires (epoch ms) an id carries. */
export function expiryOf (id: string): number {
  return parseInt(id.slice(0, 8), 16) * 1000
}
