export { openState, checkState, type StateStore } from './lmdb.js'
export { Incarnation, localProcessAlive, processIdentity, type Owner, HEARTBEAT_MS, STALE_MS } from './incarnation.js'
