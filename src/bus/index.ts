export { LocalBus } from './local.js'
export { transactionalLog, type Bus, type FollowableBus, type BusMessage, type OutgoingMessage, type Splice, type StoredMessage, type Subscription, type SubscribeOptions, type TransactionalLog } from './types.js'
export { createBus, createKafkaClient } from './create.js'
export { MicroBatcher, type BatcherOptions, type Settled } from './batcher.js'
