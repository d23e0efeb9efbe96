import type { RootDatabase } from 'lmdb'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import { FsObjectStore } from './fs-store.js'
import { S3ObjectStore } from './s3-store.js'
import { SlabPool, defaultLimits } from './slabs.js'
import type { ObjectStore, ProcessOwner } from './types.js'

/**
 * The configured store, with one slab pool for all its uploads: slabs of
 * S3_PART_SIZE, as many as STORAGE_BUFFER_BYTES holds, shared out per client.
 * The S3 store records its multipart uploads in `state`, the gateway's LMDB
 * environment. `owner` (the process incarnation) tells either store which
 * leftovers (partial files, recorded uploads) belong to a process that ended.
 */
export function createObjectStore (config: Config, state: RootDatabase, owner: ProcessOwner, log?: Logger): ObjectStore {
  const slabs = createSlabPool(config)
  return config.storage === 's3' ? new S3ObjectStore(config, slabs, state, owner, log) : new FsObjectStore(config.dataDir, slabs, config.s3QueueSize, owner)
}

function createSlabPool (config: Config): SlabPool {
  const maxSlabs = Math.floor(config.storageBufferBytes / config.s3PartSize)
  const defaults = defaultLimits(maxSlabs)
  const slabsPerTenant = config.storageClientMaxSlabs ?? defaults.slabsPerTenant
  return new SlabPool(config.s3PartSize, maxSlabs, {
    slabsPerTenant,
    uploadsPerTenant: config.storageClientMaxUploads ?? 2 * slabsPerTenant,
    waitMs: config.storageSlabWaitMs,
    minBytesPerS: config.storageUploadMinBytesPerS,
    holdMs: config.storageSlabHoldMs
  })
}
