import type { Config } from '../config/index.js'
import { FsObjectStore, type PartialOwner } from './fs-store.js'
import { S3ObjectStore } from './s3-store.js'
import { SlabPool } from './slabs.js'
import type { ObjectStore } from './types.js'

/**
 * The configured store, with one slab pool for all its uploads: slabs of
 * S3_PART_SIZE, as many as STORAGE_BUFFER_BYTES holds. `owner` (the process
 * incarnation) tells the fs store whose partial files are left over.
 */
export function createObjectStore (config: Config, owner?: PartialOwner): ObjectStore {
  const slabs = new SlabPool(config.s3PartSize, Math.floor(config.storageBufferBytes / config.s3PartSize))
  return config.storage === 's3' ? new S3ObjectStore(config, slabs) : new FsObjectStore(config.dataDir, slabs, config.s3QueueSize, owner)
}
