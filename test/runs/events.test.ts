import t from 'tap'
import { busValue, decodeEvent, encodeEvent, formatEvent } from '../../src/runs/events.js'
import { uuidv7 } from '../../src/runs/ids.js'

const record = {
  run_id: 'run-1', tenant_id: 'acme', mode: 'echo', message: 'say "hi"\nthen \u2603 and \ud800', status: 'succeeded',
  created_at: '2026-01-01T00:00:00.000Z', started_at: null, ended_at: null, result: undefined, error: null, last_event_id: 3
}
const step = { type: 'echo', step: 1, text: '}{"data":', nested: { list: [1, 'two', null], '2': 'integer-like key' } }

t.test('an event is encoded once to exactly what JSON.stringify gives, and read back without parsing its data', async t => {
  for (const [id, name, data] of [[1, 'run.queued', record], [2, 'step', step], [12345, 'run.succeeded', {}]] as const) {
    const e = encodeEvent(id, name, data)
    t.equal(e.json, JSON.stringify({ id, event: name, data }), `${name}: stored JSON`)
    t.equal(e.data, JSON.stringify(data), `${name}: data JSON`)
    t.same(decodeEvent(e.json), e, `${name}: decoded as encoded`)
  }
  t.throws(() => decodeEvent('{"id":1,"data":{}}'), /not a stored run event/)
})

t.test('the bus value and the SSE frame are the previous ones, byte for byte', async t => {
  for (const [id, name, data] of [[1, 'run.queued', record], [2, 'step', step]] as const) {
    const e = encodeEvent(id, name, data)
    t.equal(busValue('run-1', 'acme "corp"', e), JSON.stringify({ run_id: 'run-1', tenant_id: 'acme "corp"', id, event: name, data }), `${name}: bus value`)
    t.equal(formatEvent(e), `id: ${id}\nevent: ${name}\ndata: ${JSON.stringify(data)}\n\n`, `${name}: SSE frame`)
  }
})

t.test('run ids are UUIDv7: time first, so later ids sort later; random after', async t => {
  const at = Date.parse('2026-05-01T12:00:00.000Z')
  const id = uuidv7(at)
  t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  t.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), at, 'the first 48 bits are the time in ms')
  t.ok(uuidv7(at) < uuidv7(at + 1), 'a later millisecond sorts later')
  const many = new Set(Array.from({ length: 10_000 }, () => uuidv7(at)))
  t.equal(many.size, 10_000, 'ids of the same millisecond differ')
})
