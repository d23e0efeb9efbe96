import { agentic, type LlmSettings } from './agentic.js'
import { echo } from './echo.js'
import type { Mode } from './types.js'

export { ModeError, type Mode, type ModeInput } from './types.js'
export type { LlmSettings } from './agentic.js'

export const DEFAULT_MODE = 'agentic'

export function builtInModes (llm: LlmSettings): ReadonlyMap<string, Mode> {
  return new Map<string, Mode>([['agentic', agentic(llm)], ['echo', echo]])
}
