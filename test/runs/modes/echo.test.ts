import t from 'tap'
import { echo } from '../../../src/runs/modes/echo.js'
import type { ModeInput } from '../../../src/runs/modes/types.js'

/** An input whose signal getter counts its reads, as the run manager's makes an AbortController on the first. */
function input (options: Record<string, unknown>) {
  const steps: Array<Record<string, unknown>> = []
  const controller = new AbortController()
  let signalReads = 0
  const given: ModeInput = {
    message: 'hi',
    options,
    get signal () { signalReads++; return controller.signal },
    emit: async (type, message, data) => { steps.push({ type, message, data }) }
  }
  return { given, steps, reads: () => signalReads }
}

t.test('echo emits the steps asked for and returns the message', async t => {
  const { given, steps } = input({ steps: 3 })
  t.same(await echo(given), { output: 'hi' })
  t.same(steps, [1, 2, 3].map(step => ({ type: 'echo.step', message: `Echo step ${step}`, data: { step, text: 'hi' } })))
})

t.test('a long message is echoed once, not in every step: a step carries its first 256 characters', async t => {
  const { given, steps } = input({ steps: 1000 })
  given.message = 'x'.repeat(64 * 1024)
  t.same(await echo(given), { output: given.message }, 'the answer is the whole message')
  t.equal(steps.length, 1000)
  t.same(steps[0]!.data, { step: 1, text: 'x'.repeat(256), truncated: true })
  const bytes = steps.reduce((n, s) => n + JSON.stringify(s.data).length, 0)
  t.ok(bytes < 1000 * 300, `the steps hold ${bytes} bytes, not 1000 copies of 64 KiB`)
})

t.test('echo reads its signal only when it waits between steps', async t => {
  const quick = input({ steps: 2 })
  await echo(quick.given)
  t.equal(quick.reads(), 0, 'no delay: the signal is never read')
  const slow = input({ steps: 2, delay_ms: 1 })
  await echo(slow.given)
  t.ok(slow.reads() > 0, 'with a delay the wait listens to the signal')
})
