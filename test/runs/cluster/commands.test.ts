import t from 'tap'
import { COMMAND_SCHEMA, decodeCommand, encodeCommand, type RunCommand } from '../../../src/runs/cluster/commands.js'
import { decodeLogged } from '../../../src/runs/cluster/log-codec.js'
import { encodeEvent, eventOwner } from '../../../src/runs/events.js'

const runId = 'run-01a22228-7052-7fe6-95ab-3ea3abf515da'
const start: RunCommand = { type: 'start', run_id: runId, tenant_id: 'acme', mode: 'echo', message: 'hi', options: { steps: 2 }, conversation_id: null, created_at: 1764300000000 }

t.test('commands round-trip through their encoding', async t => {
  t.same(decodeCommand(encodeCommand(start), COMMAND_SCHEMA), start)
  const cancel: RunCommand = { type: 'cancel', run_id: runId, tenant_id: 'acme' }
  t.same(decodeCommand(encodeCommand(cancel), COMMAND_SCHEMA), cancel)
})

t.test('anything this gateway did not write is skipped, not trusted', async t => {
  const bad: Array<[string, string | undefined]> = [
    [encodeCommand(start), undefined],
    [encodeCommand(start), 'run-command@0'],
    ['not json', COMMAND_SCHEMA],
    ['null', COMMAND_SCHEMA],
    [JSON.stringify({ ...start, type: 'delete' }), COMMAND_SCHEMA],
    [JSON.stringify({ ...start, run_id: '../etc' }), COMMAND_SCHEMA],
    [JSON.stringify({ ...start, tenant_id: 'a/b' }), COMMAND_SCHEMA],
    [JSON.stringify({ ...start, options: [] }), COMMAND_SCHEMA],
    [JSON.stringify({ ...start, message: 7 }), COMMAND_SCHEMA],
    [JSON.stringify({ ...start, created_at: -1 }), COMMAND_SCHEMA],
    [JSON.stringify({ ...start, created_at: 1.5 }), COMMAND_SCHEMA],
    [JSON.stringify({ ...start, conversation_id: 3 }), COMMAND_SCHEMA]
  ]
  for (const [text, schema] of bad) t.equal(decodeCommand(text, schema), undefined, `${schema}: ${text.slice(0, 60)}`)
})

t.test("a logged event is read back with the record a lifecycle event carries; another run's key, or text of another writer, is not", async t => {
  const owner = eventOwner(runId, 'acme')
  const step = encodeEvent(owner, 3, 'echo.step', 'step', '{"step":1}', '2026-01-01T00:00:00.000Z')
  t.same(decodeLogged(runId, step.json), { id: 3, type: 'echo.step', json: step.json })
  const queued = encodeEvent(owner, 1, 'run.queued', 'Run queued', `{"status":"queued","run":{"run_id":"${runId}","status":"queued"}}`, '2026-01-01T00:00:00.000Z')
  t.equal(decodeLogged(runId, queued.json)?.record, `{"run_id":"${runId}","status":"queued"}`)
  t.equal(decodeLogged('run-other', step.json), undefined)
  t.equal(decodeLogged(runId, '{"id":"1"}'), undefined)
  t.equal(decodeLogged(runId, step.json.replace('"seq":3', '"seq":4')), undefined, 'id and seq must agree')
})
