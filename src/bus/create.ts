import type { Config } from '../config/index.js'
import type { StateStore } from '../storage/index.js'
import { LocalBus } from './local.js'
import type { Bus } from './types.js'

export function createBus (config: Config, state: StateStore): Bus {
  if (config.bus === 'kafka') throw new Error('BUS=kafka is not available in this build yet')
  return new LocalBus(state)
}
