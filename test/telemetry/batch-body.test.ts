import t from 'tap'
import { arraySpans, ndjsonSpans } from '../../src/telemetry/batch-body.js'

const texts = (body: string, spans: Array<[number, number]> | undefined) => spans?.map(([s, e]) => Buffer.from(body).subarray(s, e).toString())

t.test('NDJSON: a record a line, whitespace around it and blank lines left out', async t => {
  const body = ' {"a":1}\r\n\n\t{"b":"x\\ny"}  \n \n{"c":[1,\n'
  t.same(texts(body, ndjsonSpans(Buffer.from(body))), ['{"a":1}', '{"b":"x\\ny"}', '{"c":[1,'], 'a line that is not JSON is still a record: its own check refuses it')
  t.same(ndjsonSpans(Buffer.from('\n\r\n  ')), [])
})

t.test('a JSON array: each element, strings and brackets followed so commas inside them do not split', async t => {
  const cases: Array<[string, string[] | undefined]> = [
    ['[]', []],
    [' [ ] ', []],
    ['[{"a":1}]', ['{"a":1}']],
    ['[ {"a":"],[{\\"\\\\"} , {"b":[1,{"c":2}]}\n,3 ,"s,"]', ['{"a":"],[{\\"\\\\"}', '{"b":[1,{"c":2}]}', '3', '"s,"']],
    ['[{"a":"\\\\"}]', ['{"a":"\\\\"}']],
    ['{"a":1}', undefined],
    ['[{"a":1},]', undefined],
    ['[,{"a":1}]', undefined],
    ['[{"a":1}', undefined],
    ['[{"a":1}}', undefined],
    ['[{"a":1}] x', undefined],
    ['[{"a":"1}]', undefined],
    ['', undefined]
  ]
  for (const [body, want] of cases) t.same(texts(body, arraySpans(Buffer.from(body))), want, JSON.stringify(body))
})
