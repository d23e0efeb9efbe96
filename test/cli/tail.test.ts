import t from 'tap'
import { LocalBus } from '../../src/bus/index.js'
import { openState } from '../../src/state/index.js'
import { runGateway } from '../helpers/child.js'

t.test('gateway tail into a pipe prints the whole log, not what the pipe took before exit', async t => {
  const dir = t.testdir()
  const state = openState(dir)
  const bus = new LocalBus(state)
  const value = JSON.stringify({ pad: 'x'.repeat(1000) })
  // About 2 MB: far past what a pipe holds (64 KiB), so most of it is written after main() returned.
  for (let b = 0; b < 20; b++) await bus.publish('t', Array.from({ length: 100 }, (_, i) => ({ key: `k${b * 100 + i}`, value, headers: {} })))
  await state.close()

  const { code, stdout } = await runGateway(['tail', 't'], { DATA_DIR: dir })
  t.equal(code, 0)
  const offsets = stdout.split('\n').filter(Boolean).map(line => JSON.parse(line).offset)
  t.equal(offsets.length, 2000, 'every message printed')
  t.same(offsets, Array.from({ length: 2000 }, (_, i) => i))
})
