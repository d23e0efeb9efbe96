import t from 'tap'
import { createActor, setup } from 'xstate'
import { runLifecycle, runMachine, transitionTable, type RunMachineEvent } from '../../src/runs/machine.js'

const TYPES: Array<RunMachineEvent['type']> = ['START', 'SUCCEED', 'FAIL', 'CANCEL']

t.test('the table holds exactly the lifecycle the machine declares', async t => {
  const { transitions } = transitionTable(runMachine)
  const rows = Object.fromEntries([...transitions].map(([from, row]) => [from, Object.fromEntries(row)]))
  t.same(rows, {
    queued: { START: 'running', CANCEL: 'cancelled' },
    running: { SUCCEED: 'succeeded', FAIL: 'failed', CANCEL: 'cancelled' },
    succeeded: {},
    failed: {},
    cancelled: {}
  })
})

t.test("a run's actor goes where an actor of the machine goes, for every sequence of up to four events", async t => {
  const sequences: Array<Array<RunMachineEvent['type']>> = [[]]
  for (let length = 1; length <= 4; length++) {
    for (const s of sequences.filter(s => s.length === length - 1)) for (const type of TYPES) sequences.push([...s, type])
  }
  let compared = 0
  for (const events of sequences) {
    const run = createActor(runLifecycle).start()
    const machine = createActor(runMachine).start()
    for (const type of events) {
      run.send({ type })
      machine.send({ type })
    }
    if (run.getSnapshot().context !== machine.getSnapshot().value) t.fail(`after ${events.join(', ') || 'nothing'}: ${run.getSnapshot().context} vs ${String(machine.getSnapshot().value)}`)
    compared++
    run.stop()
    machine.stop()
  }
  t.equal(compared, 1 + 4 + 16 + 64 + 256)
})

t.test('a machine the table cannot hold (context, actions, guards) is refused, not silently flattened', async t => {
  const withContext = setup({ types: { events: {} as RunMachineEvent, context: {} as { starts: number } } }).createMachine({
    id: 'run',
    initial: 'queued',
    context: { starts: 0 },
    states: {
      queued: { on: { START: 'running' } },
      running: { type: 'final' }
    }
  })
  t.throws(() => transitionTable(withContext as unknown as typeof runMachine), /cannot hold it/)
  const notifying = setup({ types: { events: {} as RunMachineEvent } }).createMachine({
    id: 'run',
    initial: 'queued',
    states: {
      queued: { on: { START: { target: 'running', actions: () => {} } } },
      running: { type: 'final' }
    }
  })
  t.throws(() => transitionTable(notifying as unknown as typeof runMachine), /cannot hold it/)
  const notifyingInPlace = setup({ types: { events: {} as RunMachineEvent } }).createMachine({
    id: 'run',
    initial: 'queued',
    states: {
      queued: { on: { START: 'running', FAIL: { actions: () => {} } } },
      running: { type: 'final' }
    }
  })
  t.throws(() => transitionTable(notifyingInPlace as unknown as typeof runMachine), /cannot hold it/, 'an action on an event that keeps the state')
  const guarded = setup({ types: { events: {} as RunMachineEvent }, guards: { allowed: () => true } }).createMachine({
    id: 'run',
    initial: 'queued',
    states: {
      queued: { on: { START: { target: 'running', guard: 'allowed' } } },
      running: { type: 'final' }
    }
  })
  t.throws(() => transitionTable(guarded as unknown as typeof runMachine), /guarded transitions/)
})
