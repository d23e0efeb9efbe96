import t from 'tap'
import { readFileSync } from 'node:fs'
import { METRICS_SCHEMA, recordChecks, toMessage, type AssetTrackingData } from '../../src/telemetry/index.js'

const { recordErrors } = recordChecks([METRICS_SCHEMA])

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8')) as AssetTrackingData
const headers = { 'content-type': 'application/json', 'x-request-id': 'req-1', 'x-request-timestamp': '1763799330' }
const clone = (): any => structuredClone(example)

/** Applies `change` to a copy of the example and returns the errors. */
function errorsAfter (change: (r: any) => void, h: Record<string, string> = headers): Record<string, string> {
  const r = clone()
  change(r)
  return recordErrors(r, h)
}

t.test('the full example record is valid', async t => {
  t.same(recordErrors(example, headers), {})
  t.same(recordErrors({ asset_id: 'a', timestamp: '2026-01-01T00:00:00Z' }, headers), {}, 'only asset_id and timestamp are required')
})

// [description, change that must pass, change that must fail, expected key, the exact message]
const rules: Array<[string, (r: any) => void, (r: any) => void, string, string]> = [
  ['asset_id required and non-blank', r => { r.asset_id = 'x' }, r => { r.asset_id = '   ' }, 'assetId', 'must be a non-blank string'],
  ['asset_id is a string', r => { r.asset_id = 'a-1' }, r => { r.asset_id = 42 }, 'assetId', 'must be a non-blank string'],
  ['timestamp with offset', r => { r.timestamp = '2026-11-22T10:15:30+02:00' }, r => { r.timestamp = '2026-11-22T10:15:30' }, 'timestamp', 'must be an ISO 8601 timestamp with a timezone'],
  ['timestamp basic offset and no seconds', r => { r.timestamp = '2026-11-22T10:15+0200' }, r => { r.timestamp = '2026-02-30T10:15:00Z' }, 'timestamp', 'must be an ISO 8601 timestamp with a timezone'],
  ['timestamp is a string', r => { r.timestamp = '2026-11-22T10:15:30.5Z' }, r => { r.timestamp = 1763799330 }, 'timestamp', 'must be an ISO 8601 timestamp with a timezone'],
  ['year integer', r => { r.year = 1999 }, r => { r.year = 1999.5 }, 'year', 'must be an integer from -9223372036854775808 to 9223372036854775807'],
  ['year within int64', r => { r.year = -(2 ** 63) }, r => { r.year = 1e19 }, 'year', 'must be an integer from -9223372036854775808 to 9223372036854775807'],
  ['type string', r => { r.type = 'container' }, r => { r.type = 7 }, 'type', 'must be string'],
  ['owner string', r => { r.owner = 'x' }, r => { r.owner = ['x'] }, 'owner', 'must be string'],
  ['gps object', r => { r.gps = {} }, r => { r.gps = 'here' }, 'gps', 'must be object'],
  ['latitude -90..90', r => { r.gps.latitude = -90 }, r => { r.gps.latitude = 90.0001 }, 'gps.latitude', 'must be a number between -90 and 90 degrees'],
  ['longitude -180..180', r => { r.gps.longitude = 180 }, r => { r.gps.longitude = -180.5 }, 'gps.longitude', 'must be a number between -180 and 180 degrees'],
  ['heading 0..360', r => { r.gps.heading = 360 }, r => { r.gps.heading = -1 }, 'gps.heading', 'must be a number between 0 and 360 degrees'],
  ['speed >= 0', r => { r.gps.speed = 0 }, r => { r.gps.speed = -3 }, 'gps.speed', 'must be a number >= 0 (km/h)'],
  ['accuracy >= 0', r => { r.gps.accuracy = 0 }, r => { r.gps.accuracy = -1 }, 'gps.accuracy', 'must be a number >= 0 (meters)'],
  ['altitude number (may be negative)', r => { r.gps.altitude = -30 }, r => { r.gps.altitude = 'high' }, 'gps.altitude', 'must be number'],
  ['x_axis -3..3', r => { r.sensors.acceleration.x_axis = -3 }, r => { r.sensors.acceleration.x_axis = 3.1 }, 'sensors.acceleration.xAxis', 'must be a number between -3 and 3 g'],
  ['y_axis -3..3', r => { r.sensors.acceleration.y_axis = 3 }, r => { r.sensors.acceleration.y_axis = -4 }, 'sensors.acceleration.yAxis', 'must be a number between -3 and 3 g'],
  ['z_axis -3..3', r => { r.sensors.acceleration.z_axis = 0 }, r => { r.sensors.acceleration.z_axis = 9.81 }, 'sensors.acceleration.zAxis', 'must be a number between -3 and 3 g'],
  ['g_force 0..5', r => { r.sensors.acceleration.g_force = 5 }, r => { r.sensors.acceleration.g_force = -0.1 }, 'sensors.acceleration.gForce', 'must be a number between 0 and 5 g'],
  ['rotation_rate_x -10..10', r => { r.sensors.gyroscope.rotation_rate_x = 10 }, r => { r.sensors.gyroscope.rotation_rate_x = 11 }, 'sensors.gyroscope.rotationRateX', 'must be a number between -10 and 10 rad/s'],
  ['rotation_rate_y -10..10', r => { r.sensors.gyroscope.rotation_rate_y = -10 }, r => { r.sensors.gyroscope.rotation_rate_y = -10.5 }, 'sensors.gyroscope.rotationRateY', 'must be a number between -10 and 10 rad/s'],
  ['rotation_rate_z -10..10', r => { r.sensors.gyroscope.rotation_rate_z = 0 }, r => { r.sensors.gyroscope.rotation_rate_z = 100 }, 'sensors.gyroscope.rotationRateZ', 'must be a number between -10 and 10 rad/s'],
  ['odometer >= 0', r => { r.sensors.odometer = 0 }, r => { r.sensors.odometer = -5 }, 'sensors.odometer', 'must be a number >= 0 (km)'],
  ['engine_status 0 or 1', r => { r.sensors.engine_status = 0 }, r => { r.sensors.engine_status = 2 }, 'sensors.engineStatus', 'must be 1 or true (on), 0 or false (off)'],
  ['engine_status true or false', r => { r.sensors.engine_status = true }, r => { r.sensors.engine_status = 'on' }, 'sensors.engineStatus', 'must be 1 or true (on), 0 or false (off)'],
  ['engine_status false', r => { r.sensors.engine_status = false }, r => { r.sensors.engine_status = null }, 'sensors.engineStatus', 'must be 1 or true (on), 0 or false (off)'],
  ['asset_id may hold spaces and any script', r => { r.asset_id = 'Lkw 42 · 東京' }, r => { r.asset_id = 'truck\u0000' }, 'assetId', 'must not contain control characters'],
  ['asset_id without a line break', r => { r.asset_id = 'a'.repeat(256) }, r => { r.asset_id = 'truck\n42' }, 'assetId', 'must not contain control characters'],
  ['asset_id at most 256 characters', r => { r.asset_id = 'é'.repeat(256) }, r => { r.asset_id = 'a'.repeat(257) }, 'assetId', 'must be at most 256 characters'],
  ['asset_id well-formed Unicode', r => { r.asset_id = 'truck-\ud83d\ude9a' }, r => { r.asset_id = 'truck-\ud83d' }, 'assetId', 'must be well-formed Unicode (no lone surrogates)'],
  ['telecom object', r => { r.telecom = { any: 'thing' } }, r => { r.telecom = 'lte' }, 'telecom', 'must be object'],
  ['driver_info object', r => { r.driver_info = {} }, r => { r.driver_info = null }, 'driverInfo', 'must be object'],
  ['co_driver_info object', r => { r.co_driver_info = {} }, r => { r.co_driver_info = [] }, 'coDriverInfo', 'must be object'],
  ['peripherals object', r => { r.peripherals = {} }, r => { r.peripherals = 1 }, 'peripherals', 'must be object'],
  ['metrics.schema required', r => { r.metrics.schema = 'svc.metrics@1.0' }, r => { delete r.metrics.schema }, 'metrics.schema', 'is required'],
  ['metrics.schema value', r => { r.metrics.schema = 'svc.metrics@1.0' }, r => { r.metrics.schema = 'svc.metrics@2.0' }, 'metrics.schema', 'must equal svc.metrics@1.0'],
  ['metrics.items required', r => { r.metrics.items = [{ k: 'a.b', v: 1 }] }, r => { delete r.metrics.items }, 'metrics.items', 'is required'],
  ['metrics.items at least 1', r => { r.metrics.items = [{ k: 'a.b', v: 1 }] }, r => { r.metrics.items = [] }, 'metrics.items', 'must hold 1 to 200 metric items'],
  ['metrics.items at most 200', r => { r.metrics.items = Array.from({ length: 200 }, () => ({ k: 'a.b', v: 1 })) }, r => { r.metrics.items = Array.from({ length: 201 }, () => ({ k: 'a.b', v: 1 })) }, 'metrics.items', 'must hold 1 to 200 metric items'],
  ['metric key pattern', r => { r.metrics.items[3].k = 'a.b_2.c.d.e.f' }, r => { r.metrics.items[3].k = 'Engine.RPM' }, 'metrics.items[3].k', 'must be 2 to 6 dot-separated lowercase segments (e.g. engine.rpm)'],
  ['metric key one segment', r => { r.metrics.items[0].k = 'engine.rpm' }, r => { r.metrics.items[0].k = 'rpm' }, 'metrics.items[0].k', 'must be 2 to 6 dot-separated lowercase segments (e.g. engine.rpm)'],
  ['metric key seven segments', r => { r.metrics.items[0].k = 'a.b.c.d.e.f' }, r => { r.metrics.items[0].k = 'a.b.c.d.e.f.g' }, 'metrics.items[0].k', 'must be 2 to 6 dot-separated lowercase segments (e.g. engine.rpm)'],
  ['metric k required', r => { r.metrics.items[1].k = 'x.y' }, r => { delete r.metrics.items[1].k }, 'metrics.items[1].k', 'is required'],
  ['metric v required', r => { r.metrics.items[1].v = { nested: true } }, r => { delete r.metrics.items[1].v }, 'metrics.items[1].v', 'is required'],
  ['metric v not null', r => { r.metrics.items[1].v = [1, 2] }, r => { r.metrics.items[1].v = null }, 'metrics.items[1].v', 'must be a number, boolean, string, object or array'],
  ['metric src enum', r => { r.metrics.items[0].src = 'j1939' }, r => { r.metrics.items[0].src = 'gps' }, 'metrics.items[0].src', 'must be one of: obd2, j1939, can, oem, derived, unknown'],
  ['metric q enum', r => { r.metrics.items[0].q = 'missing' }, r => { r.metrics.items[0].q = 'good' }, 'metrics.items[0].q', 'must be one of: ok, estimated, stale, invalid, missing'],
  ['metric ts RFC 3339', r => { r.metrics.items[0].ts = '2026-11-22T08:00:00.1-05:00' }, r => { r.metrics.items[0].ts = '2026-11-22 08:00' }, 'metrics.items[0].ts', 'must be an RFC 3339 timestamp'],
  ['metric u string', r => { r.metrics.items[0].u = 'rpm' }, r => { r.metrics.items[0].u = 1 }, 'metrics.items[0].u', 'must be string'],
  ['metric meta object', r => { r.metrics.items[0].meta = { spn: 190 } }, r => { r.metrics.items[0].meta = 'x' }, 'metrics.items[0].meta', 'must be object'],
  ['metrics.seq integer', r => { r.metrics.seq = 0 }, r => { r.metrics.seq = 'one' }, 'metrics.seq', 'must be an integer from 0 to 9223372036854775807'],
  ['metrics.seq within int64', r => { r.metrics.seq = 2 ** 62 }, r => { r.metrics.seq = 2 ** 64 }, 'metrics.seq', 'must be an integer from 0 to 9223372036854775807'],
  ['metrics.device_ts RFC 3339', r => { r.metrics.device_ts = '2026-11-22T08:15:29Z' }, r => { r.metrics.device_ts = 'yesterday' }, 'metrics.deviceTs', 'must be an RFC 3339 timestamp'],
  ['metrics.capabilities object', r => { r.metrics.capabilities = {} }, r => { r.metrics.capabilities = true }, 'metrics.capabilities', 'must be object'],
  ['event_type required', r => { r.events[0].event_type = 'impact' }, r => { delete r.events[0].event_type }, 'events[0].eventType', 'is required'],
  ['event_type free-form but non-empty', r => { r.events[0].event_type = 'custom_thing' }, r => { r.events[0].event_type = '' }, 'events[0].eventType', 'must NOT have fewer than 1 characters'],
  ['event timestamp required', r => { r.events[0].timestamp = '2026-11-22T08:15:29+00:00' }, r => { delete r.events[0].timestamp }, 'events[0].timestamp', 'is required'],
  ['event timestamp ISO 8601', r => { r.events[0].timestamp = '2026-11-22T08:15:29Z' }, r => { r.events[0].timestamp = '22/11/2026' }, 'events[0].timestamp', 'must be an ISO 8601 timestamp with a timezone'],
  ['event severity enum', r => { r.events[0].severity = 'low' }, r => { r.events[0].severity = 'critical' }, 'events[0].severity', 'must be one of: low, medium, high'],
  ['event threshold_exceeded boolean', r => { r.events[0].threshold_exceeded = false }, r => { r.events[0].threshold_exceeded = 'yes' }, 'events[0].thresholdExceeded', 'must be boolean'],
  ['event g_force 0..5', r => { r.events[0].additional_info.g_force = 0 }, r => { r.events[0].additional_info.g_force = 5.5 }, 'events[0].additionalInfo.gForce', 'must be a number between 0 and 5 g'],
  ['event speed_at_event 0..250', r => { r.events[0].additional_info.speed_at_event = 250 }, r => { r.events[0].additional_info.speed_at_event = 251 }, 'events[0].additionalInfo.speedAtEvent', 'must be a number between 0 and 250 km/h'],
  ['event cargo_weight 0..20000', r => { r.events[0].additional_info.cargo_weight = 20000 }, r => { r.events[0].additional_info.cargo_weight = -1 }, 'events[0].additionalInfo.cargoWeight', 'must be a number between 0 and 20000 kg'],
  ['events is an array', r => { r.events = [] }, r => { r.events = {} }, 'events', 'must be array'],
  ['events at most 1000', r => { r.events = Array.from({ length: 1000 }, () => ({ event_type: 'x', timestamp: '2026-01-01T00:00:00Z' })) }, r => { r.events = Array.from({ length: 1001 }, () => ({ event_type: 'x', timestamp: '2026-01-01T00:00:00Z' })) }, 'events', 'must NOT have more than 1000 items']
]

for (const [name, pass, fail, key, message] of rules) {
  t.test(name, async t => {
    t.strictSame(errorsAfter(pass), {}, 'passes')
    t.strictSame(errorsAfter(fail), { [key]: message }, `fails as ${key}, and only so`)
  })
}

/** Sets `path` (dot-separated, array indexes as numbers) in `r`, creating objects on the way. */
function setPath (r: any, path: string, value: unknown): void {
  const parts = path.split('.')
  let at = r
  for (const p of parts.slice(0, -1)) at = at[p] ??= {}
  at[parts.at(-1)!] = value
}

// Each closed range at both bounds: the bound and a hair inside pass, a hair
// outside fails with exactly the range's message. A bound moved either way
// (max 20000 → 200000, or a minimum dropped) fails here.
// [field, error key, minimum, maximum, unit]
const ranges: Array<[string, string, number, number, string]> = [
  ['gps.latitude', 'gps.latitude', -90, 90, ' degrees'],
  ['gps.longitude', 'gps.longitude', -180, 180, ' degrees'],
  ['gps.heading', 'gps.heading', 0, 360, ' degrees'],
  ['sensors.acceleration.x_axis', 'sensors.acceleration.xAxis', -3, 3, ' g'],
  ['sensors.acceleration.y_axis', 'sensors.acceleration.yAxis', -3, 3, ' g'],
  ['sensors.acceleration.z_axis', 'sensors.acceleration.zAxis', -3, 3, ' g'],
  ['sensors.acceleration.g_force', 'sensors.acceleration.gForce', 0, 5, ' g'],
  ['sensors.gyroscope.rotation_rate_x', 'sensors.gyroscope.rotationRateX', -10, 10, ' rad/s'],
  ['sensors.gyroscope.rotation_rate_y', 'sensors.gyroscope.rotationRateY', -10, 10, ' rad/s'],
  ['sensors.gyroscope.rotation_rate_z', 'sensors.gyroscope.rotationRateZ', -10, 10, ' rad/s'],
  ['events.0.additional_info.g_force', 'events[0].additionalInfo.gForce', 0, 5, ' g'],
  ['events.0.additional_info.speed_at_event', 'events[0].additionalInfo.speedAtEvent', 0, 250, ' km/h'],
  ['events.0.additional_info.cargo_weight', 'events[0].additionalInfo.cargoWeight', 0, 20000, ' kg']
]
const HAIR = 0.001

for (const [field, key, min, max, unit] of ranges) {
  t.test(`${field}: ${min}..${max} at both bounds`, async t => {
    const message = `must be a number between ${min} and ${max}${unit}`
    for (const inside of [min, min + HAIR, max - HAIR, max]) {
      t.strictSame(errorsAfter(r => setPath(r, field, inside)), {}, `${inside} passes`)
    }
    for (const outside of [min - HAIR, max + HAIR, min - 1, max + 1]) {
      t.strictSame(errorsAfter(r => setPath(r, field, outside)), { [key]: message }, `${outside} fails`)
    }
  })
}

// [field, error key, unit]: a lower bound of 0 and no upper one.
const nonNegative: Array<[string, string, string]> = [
  ['gps.speed', 'gps.speed', 'km/h'],
  ['gps.accuracy', 'gps.accuracy', 'meters'],
  ['sensors.odometer', 'sensors.odometer', 'km']
]
for (const [field, key, unit] of nonNegative) {
  t.test(`${field}: >= 0`, async t => {
    for (const inside of [0, HAIR, 1e9]) t.strictSame(errorsAfter(r => setPath(r, field, inside)), {}, `${inside} passes`)
    t.strictSame(errorsAfter(r => setPath(r, field, -HAIR)), { [key]: `must be a number >= 0 (${unit})` }, `${-HAIR} fails`)
  })
}

t.test('metrics.items: 1..200 at both bounds', async t => {
  const items = (n: number): unknown[] => Array.from({ length: n }, (_, i) => ({ k: 'engine.rpm', v: i }))
  for (const n of [1, 2, 199, 200]) t.strictSame(errorsAfter(r => { r.metrics.items = items(n) }), {}, `${n} items pass`)
  for (const n of [0, 201]) t.strictSame(errorsAfter(r => { r.metrics.items = items(n) }), { 'metrics.items': 'must hold 1 to 200 metric items' }, `${n} items fail`)
})

t.test('required headers, keyed in the spec form', async t => {
  t.same(recordErrors(example, {}), { contentType: 'must be application/json', xRequestId: 'is required', xRequestTimestamp: 'is required' })
  t.same(recordErrors(example, { ...headers, 'content-type': 'application/json; charset=utf-8' }), {})
  t.same(recordErrors(example, { ...headers, 'content-type': 'text/plain' }), { contentType: 'must be application/json' })
  t.same(recordErrors(example, { ...headers, 'content-type': 'APPLICATION/JSON ;charset=utf-8' }), {}, 'any case, spaces before the parameters')
  for (const type of ['text/plain; application/json', 'application/jsonp', 'application/json-seq', 'application/json charset=utf-8']) {
    t.strictSame(recordErrors(example, { ...headers, 'content-type': type }), { contentType: 'must be application/json' }, `${type} is not JSON`)
  }
  for (const [name, key] of [['x-request-id', 'xRequestId'], ['x-request-timestamp', 'xRequestTimestamp']] as const) {
    t.strictSame(recordErrors(example, { ...headers, [name]: '' }), { [key]: 'is required' }, `an empty ${name} is missing`)
  }
  t.strictSame(recordErrors(example, { ...headers, 'x-request-id': 'a b' }), { xRequestId: 'must be 1 to 200 visible ASCII characters' })
  t.same(recordErrors(example, { ...headers, 'x-request-timestamp': '2026-11-22T08:00:00Z' }), { xRequestTimestamp: 'must be Unix epoch seconds (an integer)' })
  t.same(recordErrors(example, { ...headers, 'x-request-timestamp': '1.5' }), { xRequestTimestamp: 'must be Unix epoch seconds (an integer)' })
  t.same(recordErrors(example, { ...headers, 'x-request-timestamp': '1' }), {}, 'an old record is never refused for its age')
})

t.test('all errors are reported at once', async t => {
  const errors = recordErrors({ asset_id: '', gps: { latitude: 100, longitude: 200 }, metrics: { schema: 'x', items: [] } }, { ...headers, 'x-request-id': '' })
  t.same(Object.keys(errors).sort(), ['assetId', 'gps.latitude', 'gps.longitude', 'metrics.items', 'metrics.schema', 'timestamp', 'xRequestId'])
})

t.test('a body that is not an object', async t => {
  t.same(recordErrors([1], headers), { body: 'must be a JSON object' })
  t.same(recordErrors('x', headers), { body: 'must be a JSON object' })
})

t.test('the published value is the record as received plus our fields', async t => {
  const raw = Buffer.from(JSON.stringify(example, null, 2) + '\n')
  const m = toMessage(example, raw.toString(), { clientId: 'fleet-1', requestId: 'req-9', receivedAt: '2026-11-22T08:15:31.000Z', tenantKey: 'fleet-1' })
  t.equal(m.key, 'truck-0042')
  t.same(m.headers, { 'x-request-id': 'req-9', 'client-id': 'fleet-1', schema: 'asset-tracking-data@1', 'message-id': 'fleet-1/req-9' })
  const value = JSON.parse(m.value as string)
  t.same(value, { ...example, client_id: 'fleet-1', received_at: '2026-11-22T08:15:31.000Z', request_id: 'req-9' })
  t.equal(value.firmware.version, '4.2.0', 'unknown fields are kept')
  t.ok((m.value as string).startsWith(raw.toString().slice(0, raw.lastIndexOf('}'))), 'the received bytes are kept as they were')

  const spoof = { ...example, client_id: 'someone-else' }
  const fixed = JSON.parse(toMessage(spoof, JSON.stringify(spoof), { clientId: 'fleet-1', requestId: 'r', receivedAt: 'now', tenantKey: 'fleet-1' }).value as string)
  t.equal(fixed.client_id, 'fleet-1', 'a client_id in the body never overrides the token')
  // A consumer that keeps the first of two equal keys must read ours too: each is written once.
  for (const field of ['client_id', 'received_at', 'request_id']) {
    const sent = { ...example, [field]: 'from-the-body' }
    const text = toMessage(sent, JSON.stringify(sent), { clientId: 'fleet-1', requestId: 'r', receivedAt: 'now', tenantKey: 'fleet-1' }).value as string
    t.equal(text.split(`"${field}":`).length - 1, 1, `${field} sent in the body is in the message once`)
  }
})

/** recordErrors as the service calls it: the parsed body and the bytes it came from. */
function errorsOfText (text: string): Record<string, string> {
  return recordErrors(JSON.parse(text), headers, Buffer.from(text))
}
const valid = '"asset_id":"truck-1","timestamp":"2026-01-01T00:00:00Z"'

t.test('a key given twice anywhere is refused, whichever value the schema would have seen', async t => {
  t.same(errorsOfText('{"asset_id":"","asset_id":"ok","timestamp":"2026-01-01T00:00:00Z"}'), { assetId: 'is given more than once' }, 'the spec\'s example')
  t.same(errorsOfText(`{${valid},"asset_id":"other"}`), { assetId: 'is given more than once' })
  t.same(errorsOfText(`{${valid},"asset\\u005fid":"other"}`), { assetId: 'is given more than once' }, 'an escape spelling the same key')
  t.same(errorsOfText(`{${valid},"gps":{"latitude":1,"latitude":95}}`), { 'gps.latitude': 'is given more than once' })
  t.same(errorsOfText(`{${valid},"peripherals":{"x":[1,{"y":{}},{"z":1,"z":2}]}}`), { 'peripherals.x[2].z': 'is given more than once' }, 'deep in an unknown field')
  t.same(errorsOfText(`{${valid},"__proto__":{},"__proto__":{}}`), { _Proto__: 'is given more than once' }, '__proto__ too')
  t.same(errorsOfText(`{${valid},"a":{"k":1},"b":{"k":1},"c":[{"k":1},{"k":2}],"d":"\\":\\"","e":":"}`), {}, 'the same key in different objects, and colons inside strings, are fine')
})

t.test('numbers JSON cannot represent are refused where they are', async t => {
  t.same(errorsOfText(`{${valid},"gps":{"altitude":1e309}}`), { 'gps.altitude': 'must be a finite number (JSON has no Infinity)' })
  t.same(errorsOfText(`{${valid},"telecom":{"rssi":[-1E400]}}`), { 'telecom.rssi[0]': 'must be a finite number (JSON has no Infinity)' }, 'in an unknown field, and negative')
  t.same(errorsOfText(`{${valid},"metrics":{"schema":"svc.metrics@1.0","items":[{"k":"engine.rpm","v":${'9'.repeat(400)}}]}}`), { 'metrics.items[0].v': 'must be a finite number (JSON has no Infinity)' }, 'an integer too long for a double')
  t.same(errorsOfText(`{${valid},"telecom":{"tiny":1e-400,"big":1.7976931348623157e308}}`), {}, 'underflow to 0 and the largest double are representable')
})

t.test('nesting deeper than 32 levels is refused, 32 is accepted', async t => {
  const nest = (levels: number): string => `{${valid},"x":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`
  t.same(errorsOfText(nest(32)), {})
  t.same(errorsOfText(nest(33)), { body: 'must not nest deeper than 32 levels' })
  const deep = `{${valid},"x":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`
  t.same(errorsOfText(deep), { body: 'must not nest deeper than 32 levels' }, 'a hundred thousand levels: no stack overflow')
})
