import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
// @ts-expect-error: the bench is plain JavaScript, without types
import { bareUws } from '../../bench/lib/targets.mjs'

// A baseline that does not start leaves a scenario without its comparison:
// every figure is then printed against nothing (a ReferenceError in the
// baseline factory did exactly that to every scenario at once).
t.test('a baseline target starts with the scenario\'s CPU pin, answers, and stops', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-targets-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const ctx = { serverCpu: undefined, tmpDir: dir, nodeArgsFor: () => [], warn: () => {} }
  const server = await bareUws().start(ctx)
  t.teardown(() => server.stop())
  const res = await fetch(`${server.url}/health`)
  t.equal(res.status, 200)
  await res.arrayBuffer()
  const exit = await server.stop()
  t.equal(exit.code, 0, 'stopped by SIGTERM')
})
