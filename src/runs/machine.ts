import { setup } from 'xstate'

export type RunMachineEvent =
  | { type: 'START' }
  | { type: 'SUCCEED' }
  | { type: 'FAIL' }
  | { type: 'CANCEL' }

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
