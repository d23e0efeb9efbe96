import { fromTransition } from 'xstate'
import type { RunStatus } from './types.js'

export type RunMachineEvent =
  | { type: 'START' }
  | { type: 'SUCCEED' }
  | { type: 'FAIL' }
  | { type: 'CANCEL' }

type Lifecycle = { readonly [S in RunStatus]: Readonly<Partial<Record<RunMachineEvent['type'], RunStatus>>> }

/**
 * The run lifecycle, declared once as its transitions: queued → running →
 * succeeded | failed, and queued | running → cancelled. Terminal states take
 * nothing; an event a state does not take leaves the run where it is, which
 * is how a late SUCCEED after a CANCEL is ignored.
 */
export const LIFECYCLE: Lifecycle = {
  queued: { START: 'running', CANCEL: 'cancelled' },
  running: { SUCCEED: 'succeeded', FAIL: 'failed', CANCEL: 'cancelled' },
  succeeded: {},
  failed: {},
  cancelled: {}
}

/**
 * What each run's xstate actor runs: the lifecycle as a transition function.
 * A `createMachine` actor cost a short run about 60 µs of CPU, most of it
 * xstate's microsteps and snapshot objects (docs/harness.md, Throughput);
 * this one about a third of that. The lifecycle has no context, guards or
 * actions for a machine to hold, so nothing is lost.
 */
export const runLifecycle = fromTransition(
  (status: RunStatus, event: RunMachineEvent): RunStatus => LIFECYCLE[status][event.type] ?? status,
  'queued' as RunStatus
)
