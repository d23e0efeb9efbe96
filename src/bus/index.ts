export { LocalBus } from './local.js'
export type { Bus, BusMessage, StoredMessage } from './types.js'
export { createBus } from './create.js'
export { MicroBatcher, type BatcherOptions } from './batcher.js'
