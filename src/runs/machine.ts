import { fromTransition } from 'xstate'
import { isTerminal, type RunStatus } from './types.js'

export type RunMachineEvent =
  | { type: 'START' }
  | { type: 'SUCCEED' }
  | { type: 'FAIL' }
  | { type: 'CANCEL' }

/** Not a run's event: what `ActorPool` sends the actor of a run that has ended, to hand it to the next run. */
export interface ReuseEvent { type: 'REUSE' }

type Lifecycle = { readonly [S in RunStatus]: Readonly<Partial<Record<RunMachineEvent['type'], RunStatus>>> }

/**
 * The run lifecycle, declared once as its transitions: queued → running →
 * succeeded | failed, queued | running → cancelled, and queued → failed for
 * a run that could not start (refused by the process that was to execute
 * it, or interrupted before it started). Terminal states take
 * nothing; an event a state does not take leaves the run where it is, which
 * is how a late SUCCEED after a CANCEL is ignored.
 */
export const LIFECYCLE: Lifecycle = {
  queued: { START: 'running', FAIL: 'failed', CANCEL: 'cancelled' },
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
 *
 * `REUSE` takes an actor whose run has ended back to `queued`, and leaves
 * one in flight where it is.
 */
export const runLifecycle = fromTransition(
  (status: RunStatus, event: RunMachineEvent | ReuseEvent): RunStatus => event.type === 'REUSE'
    ? (isTerminal(status) ? 'queued' : status)
    : LIFECYCLE[status][event.type] ?? status,
  'queued' as RunStatus
)
