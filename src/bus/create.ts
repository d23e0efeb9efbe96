import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import type { StateStore } from '../state/index.js'
import { KafkaBus } from './kafka.js'
import { LocalBus } from './local.js'
import type { FollowableBus } from './types.js'

export function createBus (config: Config, state: StateStore, log: Logger): FollowableBus {
  return config.bus === 'kafka' ? new KafkaBus(config, log) : new LocalBus(state)
}
