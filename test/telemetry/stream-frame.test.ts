import t from 'tap'
import { readFrame } from '../../src/telemetry/stream-frame.js'

const read = (text: string) => {
  const buf = Buffer.from(text)
  const frame = readFrame(buf)
  return 'spans' in frame ? { seq: frame.seq, records: frame.spans.map(([s, e]) => buf.subarray(s, e).toString()) } : frame
}

t.test('a message: its sequence number and where each record is', async t => {
  t.same(read('{"seq":0,"record":{"a":"}"}}'), { seq: 0, records: ['{"a":"}"}'] })
  t.same(read(' { "records" : [ {"a":1} , {"b":[2]} ] ,\n"seq" : 9007199254740990 } '), { seq: 9007199254740990, records: ['{"a":1}', '{"b":[2]}'] })
})

t.test('what is not a message is refused with field-keyed errors', async t => {
  const shape = { message: 'must be a JSON object {"seq": <integer>, "record": {...}} or {"seq": <integer>, "records": [...]}' }
  const cases: Array<[string, unknown]> = [
    ['[]', { seq: undefined, errors: shape }],
    ['{"seq":1,"seq":2,"record":{}}', { seq: undefined, errors: shape }],
    ['{"seq":1,"record":{}', { seq: undefined, errors: shape }],
    ['{"seq":1,"record":{}} x', { seq: undefined, errors: shape }],
    ['{}', { seq: undefined, errors: { seq: 'is required', record: 'is required' } }],
    ['{"seq":1.5,"record":{}}', { seq: undefined, errors: { seq: 'must be an integer from 0 to 2^53 - 1' } }],
    ['{"seq":01,"record":{}}', { seq: undefined, errors: { seq: 'must be an integer from 0 to 2^53 - 1' } }],
    ['{"seq":9007199254740992,"record":{}}', { seq: undefined, errors: { seq: 'must be an integer from 0 to 2^53 - 1' } }],
    ['{"seq":9007199254740991,"records":[{},{}]}', { seq: 9007199254740991, errors: { seq: 'must leave room for a sequence number per record' } }],
    ['{"seq":1,"record":{},"records":[{}]}', { seq: 1, errors: { message: 'must hold "record" or "records", not both' } }],
    ['{"seq":1,"records":[]}', { seq: 1, errors: { records: 'must hold at least one record' } }],
    ['{"seq":1,"records":{}}', { seq: 1, errors: { records: 'must be an array of records' } }],
    ['{"seq":1,"record":"x","other":1}', { seq: 1, errors: { record: 'must be an object', other: 'is not a member of a stream message' } }]
  ]
  for (const [text, want] of cases) t.same(read(text), want, text)
})
