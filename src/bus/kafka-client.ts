import { Kafka, logLevel, type KafkaConfig, type LogEntry } from 'kafkajs'
import type { Logger } from 'pino'
import type { Config } from '../config/index.js'

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error', [logLevel.WARN]: 'warn', [logLevel.INFO]: 'info', [logLevel.DEBUG]: 'debug'
}

/**
 * A kafkajs client on the configured brokers, logging through pino. Every
 * part that talks to Kafka (the bus, the runs' group and transactions) makes
 * its own from here, so they share settings but not connections: a slow
 * request of one never queues behind another's.
 */
export function kafkaClient (config: Config, log: Logger): Kafka {
  const kafkaLog = log.child({ component: 'kafkajs' })
  const options: KafkaConfig = {
    clientId: config.kafkaClientId,
    brokers: [...(config.kafkaBrokers ?? [])],
    ssl: config.kafkaTls,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    retry: { initialRetryTime: 200, maxRetryTime: 2000, retries: 5 },
    logLevel: logLevel.WARN,
    logCreator: () => ({ level, log: entry }: LogEntry) => { kafkaLog[LEVELS[level] ?? 'info']({ ...entry, message: undefined }, entry.message) }
  }
  if (config.kafkaSaslMechanism) {
    options.sasl = { mechanism: config.kafkaSaslMechanism, username: config.kafkaUsername!, password: config.kafkaPassword! } as KafkaConfig['sasl']
  }
  return new Kafka(options)
}
