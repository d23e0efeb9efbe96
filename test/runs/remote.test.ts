import t from 'tap'
import FakeTimers from '@sinonjs/fake-timers'
import pino from 'pino'
import { RemoteRuns, type RemoteOptions } from '../../src/runs/remote.js'
import { until } from '../helpers/http.js'

/**
 * RemoteRuns over stand-ins that record the order of a takeover's steps. The
 * ends it commits (`recover`) settle when the test says: lmdb makes a commit
 * visible to readers, and so to streams, before its write's promise settles.
 */
function takeover () {
  const steps: string[] = []
  let committed!: () => void
  const options = {
    outbox: {
      claim: async () => ['run-of-a-dead-process'],
      adopt: (runs: string[]) => { steps.push(`adopt ${runs.join(',')}`) }
    },
    manager: {
      recover: (runs: string[]) => new Promise<number>(resolve => { committed = () => resolve(runs.length) }),
      isActive: () => false
    },
    hub: { has: () => false, runIds: () => [] },
    bus: { subscribe: () => ({ stop: async () => { steps.push('control stopped') } }) },
    store: {},
    controlTopic: 'control',
    controlGroup: 'node',
    log: pino({ level: 'silent' })
  } as unknown as RemoteOptions
  return { remote: new RemoteRuns(options), steps, commit: () => committed() }
}

t.test('a stop waits for a takeover under way: the outbox has its runs before it stops', async t => {
  const clock = FakeTimers.install({ toFake: ['setInterval', 'clearInterval'] })
  t.teardown(() => clock.uninstall())
  const { remote, steps, commit } = takeover()
  remote.start()
  await clock.tickAsync(2000)
  const stopped = remote.stop().then(() => { steps.push('stopped') })
  await clock.tickAsync(100)
  t.same(steps, [], 'not stopped while the takeover\'s ends are being committed')
  commit()
  await stopped
  t.same(steps, ['adopt run-of-a-dead-process', 'control stopped', 'stopped'], 'the runs were handed to the outbox first')
})

t.test('a stop with no takeover under way does not wait for one', async t => {
  const clock = FakeTimers.install({ toFake: ['setInterval', 'clearInterval'] })
  t.teardown(() => clock.uninstall())
  const { remote, steps } = takeover()
  remote.start()
  await remote.stop()
  await clock.tickAsync(10_000)
  t.same(steps, ['control stopped'], 'stopped at once, and no takeover starts after it')
})

t.test('a cancel waits out its time even when the wall clock jumps forward meanwhile', async t => {
  // Only the wall clock is faked (and runs on with real time): the wait's own timers are real.
  const clock = FakeTimers.install({ toFake: ['Date'], now: Date.now(), shouldAdvanceTime: true })
  t.teardown(() => clock.uninstall())
  let ended = false
  let looks = 0
  const record = { run_id: 'run-elsewhere', tenant_id: 'tenant-a' }
  const sent: string[] = []
  const options = {
    store: { logEnd: () => { looks++; return { id: 3, terminal: ended } }, get: () => ({ ...record, status: 'cancelled' }) },
    bus: { publish: async (_topic: string, messages: Array<{ value: string }>) => { sent.push(messages[0]!.value) } },
    controlTopic: 'control',
    log: pino({ level: 'silent' })
  } as unknown as RemoteOptions
  const cancelled = new RemoteRuns(options).cancel(record as never)
  await until(() => sent.length === 1)
  clock.setSystemTime(Date.now() + 3_600_000)
  const before = looks
  // Still looking for the end after the jump (on the wall clock, the wait had ended at once).
  await until(() => looks >= before + 2)
  ended = true
  t.match(await cancelled, { run_id: 'run-elsewhere', status: 'cancelled' }, 'the end that came after the jump is answered')
})
