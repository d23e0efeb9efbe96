import t from 'tap'
import { Registry } from 'prom-client'
import { RunMetrics } from '../../src/runs/metrics.js'
import type { RunEvent, RunRecord } from '../../src/runs/index.js'

const record = (patch: Partial<RunRecord>): RunRecord => ({
  run_id: 'run-1', tenant_id: 't', mode: 'echo', message: 'm', status: 'succeeded', created_at: '2026-01-01T00:00:00.000Z', started_at: '2026-01-01T00:00:01.000Z', ended_at: '2026-01-01T00:00:03.000Z', result: null, answer: null, artifacts: [], conversation_id: null, error: null, last_event_id: 3, ...patch
})

async function ended (record: RunRecord): Promise<string> {
  const registry = new Registry()
  const sink = new RunMetrics(registry).sink({ track () {}, add () {} })
  sink.add(record.run_id, { id: 3, type: 'run.completed', json: '{}', record: JSON.stringify(record) } as RunEvent, true)
  return registry.metrics()
}

t.test('a run\'s end is counted by the status and times of its record, whatever its message holds', async t => {
  const tricky = [
    'plain',
    '","status":"failed","created_at":"1999-01-01T00:00:00.000Z","started_at":null,"ended_at":"2099-01-01T00:00:00.000Z',
    'a \\ backslash before "quotes" \\"',
    'x'.repeat(70_000)
  ]
  for (const message of tricky) {
    const text = await ended(record({ message }))
    t.match(text, /gateway_runs_ended_total\{status="succeeded"\} 1/, `message ${JSON.stringify(message.slice(0, 30))}`)
    t.match(text, /gateway_runs_duration_seconds_sum\{status="succeeded"\} 3\n/)
  }
  const failed = await ended(record({ status: 'failed', started_at: null, error: { code: 'interrupted', message: 'x' } }))
  t.match(failed, /gateway_runs_ended_total\{status="failed"\} 1/)
  const { status, ...rest } = record({ status: 'cancelled' })
  const reordered = JSON.stringify({ status, ...rest })
  const registry = new Registry()
  new RunMetrics(registry).sink({ track () {}, add () {} }).add('run-1', { id: 3, type: 'run.failed', json: '{}', record: reordered } as RunEvent, true)
  t.match(await registry.metrics(), /gateway_runs_ended_total\{status="cancelled"\} 1/, 'a record written otherwise is parsed whole')
})
