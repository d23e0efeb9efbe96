export { SharedDocuments, SHARED_PREFIX, type Versioned, type Listed } from './documents.js'
