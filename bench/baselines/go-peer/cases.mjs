// The correctness checks of try.mjs: requests sent to the gateway and to the
// Go peer, whose answers must agree (status, www-authenticate, body; for 400s
// the same `errors` keys and messages), and whose accepted records must be
// published as the same Kafka message (key, headers, value but received_at).
import { request as httpRequest } from 'node:http'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const FIXTURE = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', '..', 'test', 'fixtures', 'asset-track.json'), 'utf8'))
const rec = (patch) => JSON.stringify({ ...FIXTURE, ...patch })
const deep = (path, value) => {
  const copy = structuredClone(FIXTURE)
  const keys = path.split('.')
  let o = copy
  for (const k of keys.slice(0, -1)) o = o[k]
  if (value === undefined) delete o[keys.at(-1)]
  else o[keys.at(-1)] = value
  return JSON.stringify(copy)
}
const item = patch => deep('metrics.items', [{ ...FIXTURE.metrics.items[0], ...patch }])

/**
 * [{ name, body, headers?: (token, others) → overrides (undefined deletes), publish? }].
 * `publish`: a 200 whose Kafka message is compared too.
 */
export function cases () {
  return [
    { name: 'the spec example', body: JSON.stringify(FIXTURE), publish: true },
    { name: 'no Authorization', body: rec({}), headers: () => ({ Authorization: undefined }) },
    { name: 'empty Authorization', body: rec({}), headers: () => ({ Authorization: '' }) },
    { name: 'Bearer and nothing', body: rec({}), headers: () => ({ Authorization: 'Bearer ' }) },
    { name: 'Basic scheme', body: rec({}), headers: () => ({ Authorization: 'Basic YTpi' }) },
    { name: 'two words after Bearer', body: rec({}), headers: t => ({ Authorization: `Bearer ${t} x` }) },
    { name: 'not a JWT', body: rec({}), headers: () => ({ Authorization: 'Bearer abc.def.ghi' }) },
    { name: 'signature tampered', body: rec({}), headers: t => ({ Authorization: `Bearer ${t.slice(0, -4)}${t.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}` }) },
    { name: 'token without the scope', body: rec({}), headers: (t, o) => ({ Authorization: `Bearer ${o.noScopeToken}` }) },
    { name: 'invalid JSON', body: '{"asset_id": "a",' },
    { name: 'empty body', body: '' },
    { name: 'array body', body: '[1,2]' },
    { name: 'JSON null', body: 'null' },
    { name: 'text/plain', body: rec({}), headers: () => ({ 'Content-Type': 'text/plain' }) },
    { name: 'application/json; charset=utf-8', body: rec({}), headers: () => ({ 'Content-Type': 'application/json; charset=utf-8' }), publish: true },
    { name: 'no X-Request-Id', body: rec({}), headers: () => ({ 'X-Request-Id': undefined }) },
    { name: 'X-Request-Id too long', body: rec({}), headers: () => ({ 'X-Request-Id': 'x'.repeat(201) }) },
    { name: 'no X-Request-Timestamp', body: rec({}), headers: () => ({ 'X-Request-Timestamp': undefined }) },
    { name: 'X-Request-Timestamp 12.5', body: rec({}), headers: () => ({ 'X-Request-Timestamp': '12.5' }) },
    { name: 'all three headers wrong and a bad record', body: rec({ asset_id: ' ' }), headers: () => ({ 'Content-Type': 'text/json', 'X-Request-Id': undefined, 'X-Request-Timestamp': 'now' }) },
    { name: 'no asset_id nor timestamp', body: JSON.stringify({ type: 'truck' }) },
    { name: 'blank asset_id', body: rec({ asset_id: '   ' }) },
    { name: 'asset_id U+00A0 (JS whitespace)', body: rec({ asset_id: '\u00a0\u2003' }) },
    { name: 'asset_id a number', body: rec({ asset_id: 42 }) },
    { name: 'timestamp without zone', body: rec({ timestamp: '2026-11-22T08:15:30' }) },
    { name: 'timestamp 30 February', body: rec({ timestamp: '2026-02-30T08:15:30Z' }) },
    { name: 'timestamp 0000-02-29 (Date.UTC reads 1900)', body: rec({ timestamp: '0000-02-29T00:00Z' }) },
    { name: 'timestamp +0200, comma fraction', body: rec({ timestamp: '2026-11-22T08:15:30,5+0200' }), publish: true },
    {
      name: 'iso-date-time edge cases (one event each)',
      body: rec({
        events: ['2026-11-22T08:15Z', '2026-11-22T08:15:30.Z', '2026-11-22T08:15:30+02:0', '2026-11-22T08:15:30+0', '2026-11-22T24:00:00Z', '2026-11-22T08:15:60Z',
          '2024-02-29T00:00:00-23:59', '2023-02-29T00:00:00Z', '2026-11-22t08:15:30Z', '2026-11-22T08:15:30z', '２026-11-22T08:15:30Z', '2026-11-22T08:15:30+24', '2026-11-22T08:15:30.123456789+05:30', '0099-02-29T00:00Z', '2000-02-29T00:00Z']
          .map(timestamp => ({ event_type: 'x', timestamp }))
      })
    },
    {
      name: 'date-time edge cases (one metric each)',
      body: deep('metrics.items', ['2026-11-22T08:15:29.Z', '2026-11-22T08:15:29+01', '2026-11-22T08:15:29+01:', '2026-11-22\u200308:15:29Z', '2026-11-22TT08:15:29Z', '2026-11-22T23:59:60.5-00:00',
        '2026-11-22T00:59:60+01:00', '2026-11-22T08:15:59.99999999999999999Z', '2026-11-22T08:15:29+2400', '2026-11-22T08:15:29Z ', '2024-02-29t08:15:29z', '1900-02-29T08:15:29Z', '2026-13-01T08:15:29Z', '2026-11-22 08:15:29+05:30']
        .map((ts, i) => ({ k: 'a.b', v: i, ts })))
    },
    { name: 'gps out of range, wrong type, negative speed', body: rec({ gps: { latitude: 91, longitude: 'x', speed: -1, heading: 360.0001 } }) },
    { name: 'latitude 90.0000000000000001 (a double: 90)', body: '{"asset_id":"a","timestamp":"2026-11-22T08:15:30Z","gps":{"latitude":90.0000000000000001}}', publish: true },
    { name: 'numbers past the double range (JSON.parse: Infinity)', body: '{"asset_id":"a","timestamp":"2026-11-22T08:15:30Z","year":1e400,"gps":{"latitude":-1e400,"altitude":1e999}}' },
    { name: 'sensors enum and range', body: deep('sensors', { engine_status: 2, acceleration: { x_axis: 3.5, g_force: -0.1 }, gyroscope: { rotation_rate_z: 'fast' }, odometer: -5 }) },
    { name: 'year 1.5 and a string', body: rec({ year: 1.5, owner: 7 }) },
    { name: 'year 2021.0 (an integer)', body: '{"asset_id":"a","timestamp":"2026-11-22T08:15:30Z","year":2021.0}', publish: true },
    { name: 'telecom not an object', body: rec({ telecom: [1], driver_info: 'x', peripherals: null }) },
    { name: 'metrics wrong schema, seq -1.5', body: deep('metrics', { ...FIXTURE.metrics, schema: 'svc.metrics@2', seq: -1.5 }) },
    { name: 'metrics without items', body: deep('metrics', { schema: 'svc.metrics@1.0' }) },
    { name: 'metrics items empty', body: deep('metrics.items', []) },
    { name: 'metrics 201 items', body: deep('metrics.items', Array.from({ length: 201 }, () => FIXTURE.metrics.items[0])) },
    { name: 'metric key, value null, src and q enums', body: item({ k: 'Engine.RPM', v: null, src: 'x', q: 1 }) },
    { name: 'metric ts with a space (ajv accepts)', body: item({ ts: '2026-11-22 08:15:29Z' }), publish: true },
    { name: 'metric ts +0100 and leap second', body: deep('metrics.items', [{ k: 'a.b', v: 1, ts: '2026-11-22T08:15:29+0100' }, { k: 'a.c', v: 1, ts: '2026-12-31T23:59:60Z' }]), publish: true },
    { name: 'metric ts 23:59:60 not at UTC midnight', body: item({ ts: '2026-11-22T08:15:60Z' }) },
    { name: 'metric ts without zone, and a date only', body: deep('metrics.items', [{ k: 'a.b', v: 1, ts: '2026-11-22T08:15:29' }, { k: 'a.c', v: 1, ts: '2026-11-22' }]) },
    { name: 'metric items not objects', body: deep('metrics.items', [1, 'x']) },
    { name: 'events item empty, bad severity, empty type', body: rec({ events: [{}, { event_type: '', timestamp: 'x', severity: 'x', threshold_exceeded: 'yes' }] }) },
    { name: 'events additional_info ranges', body: rec({ events: [{ event_type: 'a', timestamp: '2026-11-22T08:15:30Z', additional_info: { g_force: 6, speed_at_event: -1, cargo_weight: 20001 } }] }) },
    { name: 'events not an array', body: rec({ events: { a: 1 } }) },
    { name: 'many problems at once', body: JSON.stringify({ timestamp: 'x', year: 'y', gps: { latitude: 'n', heading: -1 }, sensors: { engine_status: 'on' }, metrics: { items: [{ k: 'x', v: null }], seq: 'a' }, events: [{ severity: 'x' }] }) },
    { name: 'record already has client_id (re-serialised)', body: '{"asset_id":"a","timestamp":"2026-11-22T08:15:30Z","client_id":"spoof","b":1.0,"10":1e2,"2":"x\\u2028</s>","n":{"z":1,"1":2,"e":-0,"f":1e-7,"g":123456789012345678901234,"h":1e400}}', publish: true },
    { name: 'duplicate asset_id (last wins)', body: '{"asset_id":"first","timestamp":"2026-11-22T08:15:30Z","asset_id":"second"}', publish: true },
    { name: 'trailing whitespace, unicode', body: '{"asset_id":"lkw-ä-🚚","timestamp":"2026-11-22T08:15:30Z","note":"\\ud800 lone"}\n  ', publish: true },
    { name: 'invalid UTF-8 in a string', body: Buffer.concat([Buffer.from('{"asset_id":"a","timestamp":"2026-11-22T08:15:30Z","note":"'), Buffer.from([0xff, 0xe2, 0x82, 0x41, 0xf0, 0x9f]), Buffer.from('"}')]), publish: true },
    { name: 'body over 1 MiB', body: rec({ pad: 'x'.repeat(1024 * 1024) }) }
  ]
}

export const BASE_HEADERS = token => ({
  Authorization: `Bearer ${token}`,
  'Content-Type': 'application/json',
  'X-Request-Timestamp': '1763799330'
})

/**
 * One request on a fresh connection: { status, headers, body } (body text).
 * A server that answers 413 before reading the body closes the connection
 * with the rest unread, and the kernel may then reset it before the answer
 * is read (ECONNRESET / EPIPE with no response): such a request is sent again.
 */
export async function send (url, path, headers, body) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await sendOnce(url, path, headers, body)
    } catch (err) {
      if (attempt >= 5 || !['ECONNRESET', 'EPIPE'].includes(err.code)) throw err
    }
  }
}

function sendOnce (url, path, headers, body) {
  return new Promise((resolve, reject) => {
    const data = Buffer.isBuffer(body) ? body : Buffer.from(body)
    const req = httpRequest(new URL(path, url), { method: 'POST', agent: false, headers: { ...headers, 'Content-Length': String(data.length) } }, res => {
      const chunks = []
      res.on('data', c => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }))
      res.on('error', reject)
    })
    req.setTimeout(15000, () => req.destroy(new Error('timeout')))
    // A server that answers 413 before reading the body closes the socket under the rest of it.
    req.on('socket', socket => socket.on('error', () => {}))
    req.on('error', err => { if (!req.res) reject(err) })
    req.end(data)
  })
}

/** Differences between two answers, as sentences; `order` notes key-order differences (not failures). */
export function compareAnswers (a, b) {
  const problems = []
  const notes = []
  if (a.status !== b.status) problems.push(`status ${a.status} vs ${b.status}`)
  if ((a.headers['www-authenticate'] ?? '') !== (b.headers['www-authenticate'] ?? '')) problems.push(`www-authenticate ${a.headers['www-authenticate']} vs ${b.headers['www-authenticate']}`)
  if ((a.headers['retry-after'] ?? '') !== (b.headers['retry-after'] ?? '')) problems.push('retry-after differs')
  let ja, jb
  try { ja = JSON.parse(a.body); jb = JSON.parse(b.body) } catch { problems.push(`body not JSON: ${a.body.slice(0, 80)} | ${b.body.slice(0, 80)}`); return { problems, notes } }
  for (const k of ['status', 'message']) if (ja[k] !== jb[k]) problems.push(`${k} ${JSON.stringify(ja[k])} vs ${JSON.stringify(jb[k])}`)
  if (ja.errors || jb.errors) {
    const ea = ja.errors ?? {}
    const eb = jb.errors ?? {}
    const keys = new Set([...Object.keys(ea), ...Object.keys(eb)])
    for (const k of keys) {
      if (!(k in ea)) problems.push(`errors.${k} only in the peer (${eb[k]})`)
      else if (!(k in eb)) problems.push(`errors.${k} missing in the peer (gateway: ${ea[k]})`)
      else if (ea[k] !== eb[k]) problems.push(`errors.${k}: ${JSON.stringify(ea[k])} vs ${JSON.stringify(eb[k])}`)
    }
    if (problems.length === 0 && Object.keys(ea).join() !== Object.keys(eb).join()) notes.push(`key order ${Object.keys(ea).join(',')} vs ${Object.keys(eb).join(',')}`)
  }
  return { problems, notes }
}

/** Differences between the gateway's Kafka message and the peer's for one request id. */
export function compareMessages (a, b) {
  if (!a || !b) return [`message ${a ? 'missing in the peer\'s topic' : 'missing in the gateway\'s topic'}`]
  const problems = []
  if (a.key !== b.key) problems.push(`key ${JSON.stringify(a.key)} vs ${JSON.stringify(b.key)}`)
  for (const h of ['x-request-id', 'client-id', 'schema']) if (a.headers[h] !== b.headers[h]) problems.push(`header ${h} ${a.headers[h]} vs ${b.headers[h]}`)
  const strip = v => v.replace(/"received_at":"[^"]*"/, '"received_at":"…"')
  if (strip(a.value) !== strip(b.value)) problems.push(`value differs:\n      gateway ${strip(a.value).slice(0, 400)}\n      peer    ${strip(b.value).slice(0, 400)}`)
  if (!/"received_at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/.test(b.value)) problems.push('peer received_at is not an ISO instant with milliseconds')
  return problems
}
