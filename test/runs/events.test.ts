import t from 'tap'
import { decodeEvent, encodeEvent, encodeRecord, errorFrame, eventOwner, formatEvent, recordHead } from '../../src/runs/events.js'
import { uuidv7 } from '../../src/runs/ids.js'
import type { RunRecord } from '../../src/runs/types.js'

const record = {
  run_id: 'run-1', tenant_id: 'acme', mode: 'echo', message: 'say "hi"\nthen \u2603 and \ud800', status: 'succeeded',
  created_at: '2026-01-01T00:00:00.000Z', started_at: null, ended_at: null, result: undefined, error: null, last_event_id: 3
}
const step = { step: 1, text: '}{"data":', nested: { list: [1, 'two', null], '2': 'integer-like key' } }
const at = '2026-01-01T00:00:01.000Z'

t.test('an event is encoded once to exactly what JSON.stringify gives for the origin\'s envelope, and read back without parsing', async t => {
  const owner = eventOwner('run-1', 'acme "corp"\n')
  for (const [id, type, message, data] of [[1, 'run.queued', 'Run queued', { status: 'queued', run: record }], [2, 'echo.step', 'a "step"\u2028', step], [12345, 'run.completed', '', {}]] as const) {
    const e = encodeEvent(owner, id, type, message, JSON.stringify(data), at)
    t.equal(e.json, JSON.stringify({ id: String(id), type, seq: id, run_id: 'run-1', tenant_id: 'acme "corp"\n', message, data, created_at: at }), `${type}: the event object`)
    t.same(decodeEvent(e.json), { id, type, json: e.json }, `${type}: decoded as encoded`)
  }
  t.throws(() => decodeEvent('{"id":1,"event":"step","data":{}}'), /not a stored run event/, 'the previous envelope is not read')
})

t.test('only an event that starts as stored is read back; the refusal quotes at most 80 characters', async t => {
  const refusal = (json: string): string | undefined => {
    try {
      decodeEvent(json)
    } catch (err) {
      return (err as Error).message
    }
    return undefined
  }
  t.equal(refusal('[{"id":"1","type":"run.queued"}]'), 'not a stored run event: [{"id":"1","type":"run.queued"}]', 'the layout inside something else is not an event')
  t.equal(refusal(' {"id":"1","type":"run.queued"}'), 'not a stored run event:  {"id":"1","type":"run.queued"}')
  t.equal(refusal('x'.repeat(200)), `not a stored run event: ${'x'.repeat(80)}`, 'a long one is cut at 80')
})

t.test('the SSE frame: id, the type as event, the whole object as one data line; the error frame', async t => {
  const e = encodeEvent(eventOwner('run-1', 'acme'), 7, 'echo.step', 'line one\r\nline two', JSON.stringify({ text: 'a\nb\rc' }), at)
  const frame = formatEvent(e)
  t.equal(frame, `id: 7\nevent: echo.step\ndata: ${e.json}\n\n`)
  t.equal(frame.split('\n').length, 5, 'CR and LF in the data are escaped: one data line')
  t.notOk(frame.includes('\r'))
  t.equal(formatEvent(e), frame, 'built once')
  t.equal(errorFrame('run-"1"', 'stream_overflow', 4), 'event: error\ndata: {"error":"stream_overflow","run_id":"run-\\"1\\"","last_event_id":4}\n\n')
})

t.test('run ids are UUIDv7: time first, so later ids sort later; random after', async t => {
  const ms = Date.parse('2026-05-01T12:00:00.000Z')
  const id = uuidv7(ms)
  t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  t.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), ms, 'the first 48 bits are the time in ms')
  t.ok(uuidv7(ms) < uuidv7(ms + 1), 'a later millisecond sorts later')
  const many = new Set(Array.from({ length: 10_000 }, () => uuidv7(ms)))
  t.equal(many.size, 10_000, 'ids of the same millisecond differ')
})

t.test('a record is written as JSON.stringify writes it, from its head and the members that change', async t => {
  const head = (r: RunRecord) => recordHead(eventOwner(r.run_id, r.tenant_id), r)
  // Every member of RunRecord: a member added to the type and not to encodeRecord fails here.
  const base: Required<RunRecord> = {
    run_id: 'run-0195c3c2-7d0a-7b3e-9f51-6c2d8e4f1a2b',
    tenant_id: 'acme "corp"\n',
    mode: 'echo',
    message: 'say "hi"\\\n\u2028 \ud83d\ude00 \ud800 \u0000',
    status: 'queued',
    created_at: '2026-11-24T10:41:01.123Z',
    started_at: null,
    ended_at: null,
    result: null,
    answer: null,
    artifacts: [],
    conversation_id: null,
    error: null,
    last_event_id: 1
  }
  const variants: RunRecord[] = [
    base,
    { ...base, message: 'x'.repeat(64 * 1024) },
    { ...base, status: 'running', started_at: '2026-11-24T10:41:01.125Z', last_event_id: 2 },
    { ...base, status: 'succeeded', started_at: '2026-11-24T10:41:01.125Z', ended_at: '2026-11-24T10:41:01.130Z', result: { output: 'a"b', steps: [1, { n: null }], nested: { '"k"': '\t' } }, answer: 'a"b', last_event_id: 9 },
    { ...base, status: 'succeeded', ended_at: '2026-11-24T10:41:01.130Z', result: undefined, last_event_id: 4 },
    { ...base, status: 'succeeded', result: 'plain "text"\n', artifacts: [{ kind: 'file', name: 'a"b' }], conversation_id: 'conv "1"' },
    { ...base, status: 'failed', error: { code: 'mode_failed', message: 'boom "quoted"\n\u0001' } },
    { ...base, status: 'cancelled', result: [1, 'two', { three: 3 }], last_event_id: 1_000_000 }
  ]
  for (const record of variants) {
    const json = encodeRecord(head(record), record)
    t.equal(json, JSON.stringify(record), `${record.status}, result ${JSON.stringify(record.result)?.slice(0, 40)}`)
  }
  t.same(Object.keys(JSON.parse(encodeRecord(head(base), base))), Object.keys(base), 'every member, in order')

  const older = { ...base } as Partial<RunRecord>
  delete older.answer
  delete older.artifacts
  delete older.conversation_id
  delete older.started_at
  t.equal(encodeRecord(head(older as RunRecord), older as RunRecord), JSON.stringify(older), 'a record of an older layout: its missing members stay missing')
})
