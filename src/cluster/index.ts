export { SharedDocuments, SHARED_PREFIX, type Versioned, type Listed } from './documents.js'
export { NodeHeartbeats, clusterOwner, NODE_BEAT_MS, NODE_STALE_MS } from './heartbeats.js'
