import { fromTransition, initialTransition, setup, transition, type AnyMachineSnapshot } from 'xstate'
import type { RunStatus } from './types.js'

export type RunMachineEvent =
  | { type: 'START' }
  | { type: 'SUCCEED' }
  | { type: 'FAIL' }
  | { type: 'CANCEL' }

const EVENT_TYPES: ReadonlyArray<RunMachineEvent['type']> = ['START', 'SUCCEED', 'FAIL', 'CANCEL']

/**
 * The run lifecycle. queued → running → succeeded | failed, and
 * queued | running → cancelled. Terminal states accept nothing; an event a
 * state does not take leaves the run where it is, which is how a late
 * SUCCEED after a CANCEL is ignored.
 */
export const runMachine = setup({
  types: { events: {} as RunMachineEvent }
}).createMachine({
  id: 'run',
  initial: 'queued',
  states: {
    queued: { on: { START: 'running', CANCEL: 'cancelled' } },
    running: { on: { SUCCEED: 'succeeded', FAIL: 'failed', CANCEL: 'cancelled' } },
    succeeded: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' }
  }
})

export interface TransitionTable {
  initial: RunStatus
  transitions: ReadonlyMap<RunStatus, ReadonlyMap<RunMachineEvent['type'], RunStatus>>
}

/**
 * The initial state and every transition of `machine`, found by xstate's own
 * `transition` from the initial state over every event. The lifecycle has no
 * context, guards or actions, so this table is all there is to it; the walk
 * throws if the machine ever grows something a table cannot hold.
 */
export function transitionTable (machine: typeof runMachine): TransitionTable {
  // A guard could decide differently at run time than during the walk.
  for (const node of Object.values(machine.root.states)) {
    const guarded = [...node.transitions.values(), node.always ?? []].some(list => list.some(t => t.guard !== undefined))
    if (guarded) throw new Error(`run machine: state ${node.key} has guarded transitions; the transition table cannot hold them`)
  }
  const transitions = new Map<RunStatus, Map<RunMachineEvent['type'], RunStatus>>()
  const [initial, actions] = initialTransition(machine)
  const todo: AnyMachineSnapshot[] = [tableable(initial, actions)]
  for (let snapshot = todo.pop(); snapshot; snapshot = todo.pop()) {
    const from = snapshot.value as RunStatus
    if (transitions.has(from)) continue
    const row = new Map<RunMachineEvent['type'], RunStatus>()
    transitions.set(from, row)
    for (const type of EVENT_TYPES) {
      // Checked before the state is compared: an action on an event that
      // leaves the state as it is would be lost just the same.
      const next = tableable(...transition(machine, snapshot, { type }))
      if (next.value === from) continue
      row.set(type, next.value as RunStatus)
      todo.push(next)
    }
  }
  return { initial: initial.value as RunStatus, transitions }
}

function tableable (snapshot: AnyMachineSnapshot, actions: readonly unknown[]): AnyMachineSnapshot {
  if (typeof snapshot.value !== 'string' || actions.length > 0 || Object.keys(snapshot.context ?? {}).length > 0) {
    throw new Error(`run machine: state ${JSON.stringify(snapshot.value)} has actions, context or nested states; the transition table cannot hold it`)
  }
  return snapshot
}

const { initial: INITIAL, transitions: TABLE } = transitionTable(runMachine)

/**
 * What each run's actor runs: the machine's transitions, as the table above.
 * An actor of the machine itself cost a short run about 60 µs of CPU, most of
 * it in xstate's microstep and snapshot objects (docs/harness.md); this one
 * about a third of that, and it steps through the same states.
 */
export const runLifecycle = fromTransition(
  (status: RunStatus, event: RunMachineEvent) => TABLE.get(status)?.get(event.type) ?? status,
  INITIAL
)
