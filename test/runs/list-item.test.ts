import t from 'tap'
import { LIST_TEXT_MAX, listItem } from '../../src/runs/list.js'
import type { RunRecord } from '../../src/runs/index.js'

const record = (fields: Partial<RunRecord>): RunRecord => ({
  run_id: 'run-1', tenant_id: 't', mode: 'echo', message: 'm', status: 'succeeded', created_at: '2026-01-01T00:00:00Z', started_at: null, ended_at: null, result: null, answer: null, artifacts: [], conversation_id: null, error: null, last_event_id: 1, ...fields
})

t.test('a list item cuts message, answer, error message and a large result, and says so', async t => {
  const long = 'x'.repeat(64 * 1024)
  const item = listItem(record({ message: long, answer: long, result: { output: long }, error: { code: 'mode_failed', message: long } }))
  t.equal(item.message.length, LIST_TEXT_MAX)
  t.equal(item.answer!.length, LIST_TEXT_MAX)
  t.equal(item.error!.message.length, LIST_TEXT_MAX)
  t.equal(item.error!.code, 'mode_failed')
  t.equal(item.result, null)
  t.equal(item.truncated, true)
  t.ok(JSON.stringify(item).length < 4 * LIST_TEXT_MAX)
})

t.test('a small record is listed as it is, without truncated', async t => {
  const small = record({ message: 'hi', answer: 'hi', result: { output: 'hi' } })
  t.equal(listItem(small), small)
  t.equal(listItem(record({ message: 'x'.repeat(LIST_TEXT_MAX) })).truncated, undefined, 'exactly the bound is whole')
})
