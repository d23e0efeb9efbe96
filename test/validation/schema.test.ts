import t from 'tap'
import type { ErrorObject } from 'ajv'
import { compileSchema, errorKey, errorMap } from '../../src/validation/schema.js'

t.test('an ajv instance path becomes the spec\'s camel-case error key', async t => {
  t.equal(errorKey(''), '', 'the root')
  t.equal(errorKey('/asset_id'), 'assetId')
  t.equal(errorKey('/metrics/items/3/k'), 'metrics.items[3].k')
  t.equal(errorKey('/0'), '[0]', 'an index at the root')
  t.equal(errorKey('/videos/12/content_type'), 'videos[12].contentType')
  t.equal(errorKey('/a1b'), 'a1b', 'digits inside a name are a name')
  t.equal(errorKey('/rotation_rate_y'), 'rotationRateY', 'every underscore')
  t.equal(errorKey('/sensor_2_temp'), 'sensor2Temp', 'an underscore before a digit')
  t.equal(errorKey('/a_B'), 'a_B', 'only a lower-case letter or digit is raised')
  t.equal(errorKey('/1a'), '1a', 'a name starting with a digit is not an index')
  t.equal(errorKey('/a~1b/c~0d'), 'a/b.c~d', 'JSON pointer escapes are undone')
  t.equal(errorKey('/a~01'), 'a~1', '~01 is "~1", not "/"')
  t.equal(errorKey('/a~1~1b'), 'a//b', 'every escape, not only the first')
  t.equal(errorKey('/x~0~0'), 'x~~')
  t.equal(errorKey('/subject', 'client_id'), 'subject.clientId', 'a missing property joins the path')
  t.equal(errorKey('', 'event_id'), 'eventId', 'a missing property at the root')
  t.equal(errorKey('/items/2', 'gps_lat'), 'items[2].gpsLat')
})

const validate = compileSchema<unknown>({
  type: 'object',
  required: ['asset_id', 'when'],
  additionalProperties: false,
  properties: {
    asset_id: { type: 'string', minLength: 1 },
    when: { type: 'string', format: 'iso-date-time', 'x-error': 'must be an ISO 8601 date-time with a timezone' },
    at: { type: 'string', format: 'date-time' },
    kind: { enum: ['truck', 'van'] },
    either: { type: ['string', 'number'] },
    items: { type: 'array', items: { type: 'object', required: ['gps_lat'], properties: { gps_lat: { type: 'number', maximum: 90 } } } }
  }
})

t.test('one compiled schema reports every error at once, keyed and worded as the spec shows', async t => {
  t.ok(validate({ asset_id: 'a', when: '2026-11-23T07:17:46+02:00', at: '2026-11-23T07:17:46Z', kind: 'van', either: 3, items: [{ gps_lat: 1 }] }))
  t.ok(validate({ asset_id: 'a', when: '2026-11-23T07:17Z', either: 'x' }), 'a union type is allowed (allowUnionTypes)')
  t.notOk(validate({ asset_id: '', when: '2026-11-23T07:17:46', at: 'yesterday', kind: 'bike', either: true, items: [{ gps_lat: 91 }, {}] }))
  t.same(errorMap(validate.errors), {
    assetId: 'must NOT have fewer than 1 characters',
    when: 'must be an ISO 8601 date-time with a timezone',
    at: 'must match format "date-time"',
    kind: 'must be one of: truck, van',
    either: 'must be string,number',
    'items[0].gpsLat': 'must be <= 90',
    'items[1].gpsLat': 'is required'
  })
  t.notOk(validate({}))
  t.same(errorMap(validate.errors), { assetId: 'is required', when: 'is required' }, 'a missing field is "is required"')
})

t.test('the root: a non-object is "must be a JSON object" under "body"', async t => {
  for (const body of [[], 'x', 1, null]) {
    t.notOk(validate(body))
    t.same(errorMap(validate.errors), { body: 'must be a JSON object' }, JSON.stringify(body))
  }
  t.notOk(validate({ asset_id: 'a', when: '2026-11-23T07:17:46Z', extra: 1 }))
  t.same(errorMap(validate.errors), { body: 'must NOT have additional properties' }, 'another root error keeps its own message')
})

t.test('the first message per key wins; no errors give an empty map', async t => {
  const e = (over: Partial<ErrorObject>): ErrorObject => ({ keyword: 'maximum', instancePath: '/speed', schemaPath: '#', params: {}, message: 'first', ...over })
  t.same(errorMap([e({}), e({ message: 'second' }), e({ keyword: 'required', instancePath: '', params: { missingProperty: 'speed' } })]), { speed: 'first' })
  t.same(errorMap([e({ keyword: 'required', instancePath: '', params: { missingProperty: 'speed' } }), e({})]), { speed: 'is required' })
  t.same(errorMap([e({ message: undefined })]), { speed: 'is invalid' }, 'an error without a message')
  t.same(errorMap([e({ keyword: 'type', instancePath: '/speed', message: 'must be number' })]), { speed: 'must be number' }, 'a type error below the root keeps ajv\'s message')
  t.same(errorMap([]), {})
  t.same(errorMap(null), {})
  t.same(errorMap(undefined), {})
})

t.test('the setup is strict: an unknown keyword is a schema bug, refused at compile time', async t => {
  t.throws(() => compileSchema({ type: 'object', propertiez: {} }), /unknown keyword/)
  t.throws(() => compileSchema({ type: 'string', format: 'email' }), /unknown format/, 'only the formats the spec uses are loaded')
  t.throws(() => compileSchema({ type: 'string', 'x-error': 3 }), /x-error/, 'x-error carries a string')
})
