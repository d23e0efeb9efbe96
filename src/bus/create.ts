import type { Kafka } from 'kafkajs'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import type { StateStore } from '../state/index.js'
import { LocalBus } from './local.js'
import type { FollowableBus } from './types.js'

/**
 * The bus BUS names. kafkajs is loaded only for BUS=kafka: it is a tenth of
 * a second of start-up that the embedded default and `gateway tail` never use.
 */
export async function createBus (config: Config, state: StateStore, log: Logger): Promise<FollowableBus> {
  if (config.bus !== 'kafka') return new LocalBus(state)
  const { KafkaBus } = await import('./kafka.js')
  return new KafkaBus(config, log)
}

/** A kafkajs client on the configured brokers (`kafka-client.ts`), loaded only when asked for, as the bus is. */
export async function createKafkaClient (config: Config, log: Logger): Promise<Kafka> {
  const { kafkaClient } = await import('./kafka-client.js')
  return kafkaClient(config, log)
}
