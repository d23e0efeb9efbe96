import t from 'tap'
import { createActor } from 'xstate'
import { LIFECYCLE, runLifecycle, type RunMachineEvent } from '../../src/runs/machine.js'
import { IN_FLIGHT, TERMINAL, isTerminal, type RunStatus } from '../../src/runs/types.js'

const TYPES: Array<RunMachineEvent['type']> = ['START', 'SUCCEED', 'FAIL', 'CANCEL']

/** The lifecycle the design names, written out independently of the table. */
function expected (from: RunStatus, type: RunMachineEvent['type']): RunStatus {
  if (from === 'queued' && type === 'START') return 'running'
  if (from === 'running' && type === 'SUCCEED') return 'succeeded'
  if ((from === 'queued' || from === 'running') && type === 'FAIL') return 'failed'
  if ((from === 'queued' || from === 'running') && type === 'CANCEL') return 'cancelled'
  return from
}

t.test('the table names every status, and terminal ones take nothing', async t => {
  t.same(Object.keys(LIFECYCLE).sort(), [...IN_FLIGHT, ...TERMINAL].sort())
  for (const s of TERMINAL) t.same(LIFECYCLE[s], {}, `${s} is final`)
})

t.test("a run's actor starts queued and follows the lifecycle for every sequence of up to four events", async t => {
  const sequences: Array<Array<RunMachineEvent['type']>> = [[]]
  for (let length = 1; length <= 4; length++) {
    for (const s of sequences.filter(s => s.length === length - 1)) for (const type of TYPES) sequences.push([...s, type])
  }
  let compared = 0
  for (const events of sequences) {
    const actor = createActor(runLifecycle).start()
    let status: RunStatus = 'queued'
    t.equal(actor.getSnapshot().context, 'queued')
    for (const type of events) {
      actor.send({ type })
      status = expected(status, type)
    }
    if (actor.getSnapshot().context !== status) t.fail(`after ${events.join(', ') || 'nothing'}: ${actor.getSnapshot().context}, expected ${status}`)
    compared++
    actor.stop()
  }
  t.equal(compared, 1 + 4 + 16 + 64 + 256)
})

t.test('REUSE takes an ended run\'s actor back to queued, and leaves one in flight where it is', async t => {
  const paths: Record<RunStatus, Array<RunMachineEvent['type']>> = {
    queued: [],
    running: ['START'],
    succeeded: ['START', 'SUCCEED'],
    failed: ['START', 'FAIL'],
    cancelled: ['CANCEL']
  }
  for (const [status, events] of Object.entries(paths) as Array<[RunStatus, Array<RunMachineEvent['type']>]>) {
    const actor = createActor(runLifecycle).start()
    for (const type of events) actor.send({ type })
    t.equal(actor.getSnapshot().context, status)
    actor.send({ type: 'REUSE' })
    t.equal(actor.getSnapshot().context, isTerminal(status) ? 'queued' : status, `from ${status}`)
    actor.send({ type: 'START' })
    t.equal(actor.getSnapshot().context, isTerminal(status) || status === 'queued' ? 'running' : status, `then START, from ${status}`)
    actor.stop()
  }
})
