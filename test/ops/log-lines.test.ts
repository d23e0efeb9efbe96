import t from 'tap'
import { spawnGateway } from '../helpers/child.js'
import { jsonTextProblems } from '../../src/validation/index.js'

/**
 * A log line is read by a collector as JSON: one that gives a key twice is
 * read differently by different parsers (the last copy, the first, or a
 * refusal), as the gateway itself refuses such a record on the bus.
 */
t.test('every log line of a start, a run and a stop is JSON with each key once', async t => {
  const gateway = spawnGateway(t, ['start'], { DATA_DIR: t.testdir() })
  const { harnessPort } = await gateway.waitFor('gateway listening') as { harnessPort: number }
  const started = await fetch(`http://127.0.0.1:${harnessPort}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hello', mode: 'echo' }) })
  t.equal(started.status, 200)
  gateway.proc.kill('SIGTERM')
  t.equal(await gateway.exit, 0)
  t.ok(gateway.texts.length >= 4, `${gateway.texts.length} lines`)
  const bad = gateway.texts.flatMap(text => {
    let value: unknown
    try { value = JSON.parse(text) } catch { return [`not JSON: ${text}`] }
    const problems = jsonTextProblems(Buffer.from(text), value)
    return Object.keys(problems).length === 0 ? [] : [`${JSON.stringify(problems)}: ${text}`]
  })
  t.same(bad, [])
  t.equal(gateway.stderr(), '', 'nothing is printed beside the log')
  t.ok(gateway.lines.some(l => l['component'] === 'run-outbox'), 'a line of a harness part says which part, once')
})
