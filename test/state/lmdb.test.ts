import t from 'tap'
import { openState } from '../../src/state/index.js'

// lmdb-js's overlappingSync loses commits when processes share an
// environment (src/state/lmdb.ts); test/bus/local.test.ts shows the loss
// across processes, which is a race. This is the same fault, every time.
t.test('every commit is flushed inside its transaction: overlappingSync is off', async t => {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  // lmdb-js sets it on the store once reconciled with the environment's flags; its types omit it.
  t.equal((state as unknown as { overlappingSync: boolean }).overlappingSync, false)
  const db = state.openDB<string, string>({ name: 'x' })
  await state.transaction(() => db.put('k', 'v'))
  t.equal(db.get('k'), 'v')
})
