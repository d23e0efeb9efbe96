export { openState, checkState, type StateStore } from './lmdb.js'
export { Incarnation, type Owner, type RemoteOwner, HEARTBEAT_MS, STALE_MS } from './incarnation.js'
export { SharedDocuments, SHARED_PREFIX, type Versioned, type Listed } from './s3-documents.js'
export { NodeHeartbeats, clusterOwner, NODE_BEAT_MS, NODE_STALE_MS } from './heartbeats.js'
