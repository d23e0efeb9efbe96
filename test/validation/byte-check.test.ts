import t from 'tap'
import { compileBodyCheck } from '../../src/validation/schema.js'

const schema = {
  type: 'object',
  required: ['id', 'at'],
  properties: {
    id: { type: 'string', pattern: '\\S', 'x-error': 'a message only' },
    at: { type: 'string', format: 'date-time' },
    n: { type: 'integer', minimum: 0 },
    lat: { type: 'number', minimum: -90, maximum: 90 },
    on: { enum: [0, 1, true, false] },
    tag: { const: 'v1' },
    name: { type: 'string', minLength: 2 },
    list: { type: 'array', minItems: 1, maxItems: 2, items: { type: 'object', required: ['k'], properties: { k: { type: 'string' } } } },
    any: { type: ['number', 'string', 'object', 'array', 'boolean'] }
  }
}
const check = compileBodyCheck(schema, ['id', 'extra'])
const ok = (members: string): boolean => check(Buffer.from(`{"id":"a","at":"2026-01-01T00:00:00Z"${members}}`)) !== undefined

t.test('a valid body is accepted and its captured members returned', async t => {
  t.same(check(Buffer.from(' {"id":"dev-1", "at":"2026-01-01T00:00:00Z"}\n')), { id: 'dev-1' })
  t.same(check(Buffer.from('{"id":"x","at":"2026-01-01T00:00:00Z","extra":{"a":[1,2]}}')), { id: 'x', extra: true }, 'a captured member that is not a string is reported present')
  t.ok(ok(',"n":0,"lat":-90,"on":true,"tag":"v1","name":"ab","list":[{"k":"x"}],"any":[{}]'), 'every keyword at its edge')
  t.ok(ok(',"unknown":{"deep":[null,true,false,-0.5e-3,"\\u00e9\\n",{"x":"\u00e9"}]}'), 'unknown members: any JSON, escapes and UTF-8 where nothing reads the string')
  t.ok(ok(',"n":1e2,"lat":9E+1'), 'exponents')
  t.ok(ok(',"n":2.0'), 'an integer written with a fraction (ajv counts 2.0 an integer)')
  t.not(check(Buffer.from('{"id":"a","at":"2016-12-31T23:59:60Z"}')), undefined, 'a timestamp the byte recogniser leaves to the format function (a leap second)')
  t.not(check(Buffer.from('{"id":"a","at":"2026-01-01 00:00:00z"}')), undefined, 'the same for a space instead of T')
})

t.test('anything the full path refuses, or might, is left to it', async t => {
  const refused: Record<string, string> = {
    'a required member missing': '{"id":"a"}',
    'a key twice': '{"id":"a","at":"2026-01-01T00:00:00Z","id":"b"}',
    'a key twice, deeper': '{"id":"a","at":"2026-01-01T00:00:00Z","x":{"k":1,"j":2,"k":3}}',
    'a key twice, one escaped': '{"id":"a","at":"2026-01-01T00:00:00Z","\\u0069d":"b"}',
    'an escape in a string the schema reads': '{"id":"\\u0061","at":"2026-01-01T00:00:00Z"}',
    'non-ASCII in a string the schema reads': '{"id":"\u00e9","at":"2026-01-01T00:00:00Z"}',
    'a key with non-ASCII': '{"id":"a","at":"2026-01-01T00:00:00Z","\u00e9":1}',
    'a pattern not matched': '{"id":" ","at":"2026-01-01T00:00:00Z"}',
    'a format not matched': '{"id":"a","at":"2026-02-30T00:00:00Z"}',
    'below the minimum': '{"id":"a","at":"2026-01-01T00:00:00Z","n":-1}',
    'above the maximum': '{"id":"a","at":"2026-01-01T00:00:00Z","lat":90.00000000000001}',
    'not an integer': '{"id":"a","at":"2026-01-01T00:00:00Z","n":1.5}',
    'not in the enum': '{"id":"a","at":"2026-01-01T00:00:00Z","on":2}',
    'not the const': '{"id":"a","at":"2026-01-01T00:00:00Z","tag":"v2"}',
    'too short': '{"id":"a","at":"2026-01-01T00:00:00Z","name":"a"}',
    'too few items': '{"id":"a","at":"2026-01-01T00:00:00Z","list":[]}',
    'too many items': '{"id":"a","at":"2026-01-01T00:00:00Z","list":[{"k":"a"},{"k":"b"},{"k":"c"}]}',
    'a wrong type': '{"id":"a","at":"2026-01-01T00:00:00Z","any":null}',
    'a number past double': '{"id":"a","at":"2026-01-01T00:00:00Z","x":1e400}',
    'a number past double, unread': '{"id":"a","at":"2026-01-01T00:00:00Z","x":[-1E309]}',
    'a leading zero': '{"id":"a","at":"2026-01-01T00:00:00Z","x":01}',
    'a bare fraction': '{"id":"a","at":"2026-01-01T00:00:00Z","x":1.}',
    'a control character': '{"id":"a","at":"2026-01-01T00:00:00Z","x":"a\u0001"}',
    'a bad escape': '{"id":"a","at":"2026-01-01T00:00:00Z","x":"\\x41"}',
    'a trailing comma': '{"id":"a","at":"2026-01-01T00:00:00Z",}',
    'trailing bytes': '{"id":"a","at":"2026-01-01T00:00:00Z"}x',
    'two values': '{"id":"a","at":"2026-01-01T00:00:00Z"} {}',
    'a byte order mark': '\ufeff{"id":"a","at":"2026-01-01T00:00:00Z"}',
    'not an object': '[{"id":"a","at":"2026-01-01T00:00:00Z"}]',
    'cut short': '{"id":"a","at":"2026-01-01T00:00:00Z"',
    'an unterminated string': '{"id":"a","at":"2026-01-01T00:00:00Z","x":"abc',
    'a misspelt literal': '{"id":"a","at":"2026-01-01T00:00:00Z","x":tru}',
    'empty': ''
  }
  for (const [what, body] of Object.entries(refused)) t.equal(check(Buffer.from(body)), undefined, what)
})

t.test('distinct keys of one hash are left to the full path, so colliding keys cost no byte comparisons', async t => {
  // "Aa" and "BB" share the walk's hash (65·31 + 97 = 66·31 + 66) and length.
  t.equal(check(Buffer.from('{"id":"a","at":"2026-01-01T00:00:00Z","Aa":1,"BB":2}')), undefined, 'side by side')
  t.not(check(Buffer.from('{"id":"a","at":"2026-01-01T00:00:00Z","Aa":1,"x":{"BB":2}}')), undefined, 'in different objects they are no concern')
})

t.test('a string accepted before is known by its bytes, not by its slot', async t => {
  // "`  " and "   " fall in one of the 64 slots (hashes 93280 and 31776);
  // the first passes the pattern \S, the second must still be refused.
  t.same(check(Buffer.from('{"id":"`  ","at":"2026-01-01T00:00:00Z"}')), { id: '`  ' })
  t.same(check(Buffer.from('{"id":"`  ","at":"2026-01-01T00:00:00Z"}')), { id: '`  ' }, 'the same string again, from the slot')
  t.equal(check(Buffer.from('{"id":"   ","at":"2026-01-01T00:00:00Z"}')), undefined, 'another string of the slot is checked')
})

t.test('nesting: 32 levels are read, 33 are left to the full path', async t => {
  const nest = (levels: number): Buffer => Buffer.from(`{"id":"a","at":"2026-01-01T00:00:00Z","x":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`)
  t.not(check(nest(32)), undefined)
  t.equal(check(nest(33)), undefined)
})

t.test('a schema keyword the walk does not know fails compilation, not a request', async t => {
  t.throws(() => compileBodyCheck({ type: 'object', oneOf: [] }), /keyword oneOf is not supported/)
  t.throws(() => compileBodyCheck({ type: 'object', properties: { x: { additionalProperties: false } } }), /keyword additionalProperties/)
  t.throws(() => compileBodyCheck({ type: 'string', format: 'email' }), /unknown format email/)
  t.throws(() => compileBodyCheck({ type: 'object', properties: { 'caf\u00e9': {} } }), /not plain ASCII/)
  t.throws(() => compileBodyCheck({ enum: [{}] }), /primitives/)
  t.throws(() => compileBodyCheck({ type: 'object', properties: { Aa: {}, BB: {} } }), /share a hash/)
})
