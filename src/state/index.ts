export { openState, checkState, type StateStore } from './lmdb.js'
