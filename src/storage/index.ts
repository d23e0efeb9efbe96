export { openState, checkState, type StateStore } from './state.js'
export { createObjectStore, FsObjectStore, S3ObjectStore, type ObjectStore, type StoredObject } from './objects.js'
