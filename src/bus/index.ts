export { LocalBus } from './local.js'
export { KafkaBus } from './kafka.js'
export type { Bus, BusMessage, StoredMessage } from './types.js'
export { createBus } from './create.js'
