import t from 'tap'
import { parseEnvelope, eventTypeAllowlist, publishingClientId } from '../../src/evidence/index.js'

const allow = eventTypeAllowlist(['warehouse.dock.forklift'])
const base = { schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' } }
const details = (envelope: unknown): Record<string, string> | undefined => {
  try {
    parseEnvelope(JSON.stringify(envelope), allow)
    return undefined
  } catch (err) {
    return (err as { details: Record<string, string> }).details
  }
}

t.test('a minimal envelope passes and gets an evt-<uuid> id', async t => {
  const e = parseEnvelope(JSON.stringify(base), allow)
  t.match(e.event_id, /^evt-[0-9a-f-]{36}$/)
  t.equal(parseEnvelope(JSON.stringify({ ...base, event_id: 'cam3:2026-11-22.001' }), allow).event_id, 'cam3:2026-11-22.001', 'a supplied id is kept')
  t.equal(parseEnvelope(JSON.stringify({ ...base, event_type: 'warehouse.dock.forklift' }), allow).event_type, 'warehouse.dock.forklift', 'the allowlist is extended by configuration')
})

const rules: Array<[string, object, object, string, string]> = [
  ['schema_version 1.0', { schema_version: '1.0' }, { schema_version: '2.0' }, 'schemaVersion', 'must be "1.0"'],
  ['schema_version required', {}, { schema_version: undefined }, 'schemaVersion', 'is required'],
  ['event_type required, keyed eventType', {}, { event_type: undefined }, 'eventType', 'is required'],
  ['occurred_at ISO 8601', { occurred_at: '2026-11-22T08:00:00.250+01:00' }, { occurred_at: '2026-11-22' }, 'occurredAt', 'must be an ISO 8601 timestamp with a timezone'],
  ['occurred_at required', {}, { occurred_at: undefined }, 'occurredAt', 'is required'],
  ['ended_at ISO 8601', { ended_at: '2026-11-22T09:00:00Z' }, { ended_at: 'later' }, 'endedAt', 'must be an ISO 8601 timestamp with a timezone'],
  ['severity enum', { severity: 'critical' }, { severity: 'high' }, 'severity', 'must be one of: info, warning, alert, critical'],
  ['subject required', {}, { subject: undefined }, 'subject', 'is required'],
  ['subject.device_id required', { subject: { device_id: 'x', zone_id: 'z', client_id: 'other' } }, { subject: { zone_id: 'z' } }, 'subject.deviceId', 'is required'],
  ['detections score 0..1', { detections: [{ class: 'person', score: 1 }] }, { detections: [{ score: 1.2 }] }, 'detections[0].score', 'must be a number between 0 and 1'],
  ['detections bbox four numbers', { detections: [{ bbox: [0, 0.1, 0.5, 1] }] }, { detections: [{ bbox: [0.1, 0.2, 0.3] }] }, 'detections[0].bbox', 'must be four numbers [x, y, w, h], each between 0 and 1'],
  ['detections bbox values 0..1', { detections: [{ bbox: [0, 0, 0.5, 0.5] }] }, { detections: [{ bbox: [0, 0, 1.5, 0.5] }] }, 'detections[0].bbox[2]', 'must be a number between 0 and 1'],
  ['media hint checksum hex64', { media: [{ checksum_sha256: 'a'.repeat(64) }] }, { media: [{ checksum_sha256: 'xyz' }] }, 'media[0].checksumSha256', 'must be 64 hexadecimal characters'],
  ['media hint source enum', { media: [{ source: 'generated' }] }, { media: [{ source: 'camera' }] }, 'media[0].source', 'must be one of: device, generated'],
  ['media hint duration number', { media: [{ duration_seconds: 12.5, ref: 'front' }] }, { media: [{ duration_seconds: 'long' }] }, 'media[0].durationSeconds', 'must be number'],
  ['attributes object', { attributes: { plate: 'B-XY 123' } }, { attributes: 'plate' }, 'attributes', 'must be object'],
  ['event_id safe for an object key', { event_id: 'evt-1' }, { event_id: '../../other-tenant/x' }, 'eventId', 'must be 1 to 128 ASCII letters, digits, ".", "_", ":", "@" or "-", starting with a letter or digit'],
  ['event_id is the storage grammar', { event_id: 'cam3@site:2026.1_a-b' }, { event_id: 'x~tag' }, 'eventId', 'must be 1 to 128 ASCII letters, digits, ".", "_", ":", "@" or "-", starting with a letter or digit'],
  ['event_id at most 128', { event_id: 'e'.repeat(128) }, { event_id: 'e'.repeat(129) }, 'eventId', 'must be 1 to 128 ASCII letters, digits, ".", "_", ":", "@" or "-", starting with a letter or digit'],
  ['subject.client_id is a storage id', { subject: { device_id: 'x', client_id: 'cam-7' } }, { subject: { device_id: 'x', client_id: 'a/../b' } }, 'subject.clientId', 'must be 1 to 128 ASCII letters, digits, ".", "_", ":", "@" or "-", starting with a letter or digit'],
  ['subject.device_id is a label: no NUL', { subject: { device_id: 'Kamera Süd 📷' } }, { subject: { device_id: 'cam\u0000' } }, 'subject.deviceId', 'must not contain control characters'],
  ['subject.device_id is a label: no lone surrogate', { subject: { device_id: '📷' } }, { subject: { device_id: '\udc00cam' } }, 'subject.deviceId', 'must be well-formed Unicode (no lone surrogates)'],
  ['subject.device_id is a label: at most 256', { subject: { device_id: 'd'.repeat(256) } }, { subject: { device_id: 'd'.repeat(257) } }, 'subject.deviceId', 'must be at most 256 characters'],
  ['subject.device_id is a label: not empty', {}, { subject: { device_id: '' } }, 'subject.deviceId', 'must not be empty'],
  ['top-level client_id refused', {}, { client_id: 'someone' }, 'clientId', 'must not be sent: client_id comes from the token (use subject.client_id to override)']
]

for (const [name, pass, fail, key, message] of rules) {
  t.test(name, async t => {
    t.equal(details({ ...base, ...pass }), undefined, 'passes')
    t.strictSame(details({ ...base, ...fail }), { [key]: message }, `fails as ${key}, and only so`)
  })
}

// Scores and box coordinates are fractions of the frame: 0 and 1 and a hair
// inside pass, a hair outside fails with exactly the message.
t.test('detections: score and every bbox value 0..1 at both bounds, bbox exactly four', async t => {
  const unit = 'must be a number between 0 and 1'
  for (const v of [0, 0.001, 0.999, 1]) {
    t.equal(details({ ...base, detections: [{ score: v }] }), undefined, `score ${v} passes`)
    t.equal(details({ ...base, detections: [{ bbox: [v, v, v, v] }] }), undefined, `bbox of ${v} passes`)
  }
  for (const v of [-0.001, 1.001, -1, 2]) {
    t.strictSame(details({ ...base, detections: [{ score: v }] }), { 'detections[0].score': unit }, `score ${v} fails`)
    for (let i = 0; i < 4; i++) {
      const bbox = [0.5, 0.5, 0.5, 0.5]
      bbox[i] = v
      t.strictSame(details({ ...base, detections: [{ bbox }] }), { [`detections[0].bbox[${i}]`]: unit }, `bbox[${i}] ${v} fails`)
    }
  }
  const four = 'must be four numbers [x, y, w, h], each between 0 and 1'
  t.strictSame(details({ ...base, detections: [{ bbox: [0, 0, 0] }] }), { 'detections[0].bbox': four }, 'three values fail')
  t.strictSame(details({ ...base, detections: [{ bbox: [0, 0, 0, 0, 0] }] }), { 'detections[0].bbox': four }, 'five values fail')
})

t.test('media duration_seconds: 0 passes, a hair below fails', async t => {
  t.equal(details({ ...base, media: [{ duration_seconds: 0 }] }), undefined)
  t.strictSame(details({ ...base, media: [{ duration_seconds: -0.001 }] }), { 'media[0].durationSeconds': 'must be >= 0' })
})

t.test('an event_type outside the allowlist is unknown_event_type keyed event_type', async t => {
  t.throws(() => parseEnvelope(JSON.stringify({ ...base, event_type: 'warehouse.fire' }), allow), {
    code: 'unknown_event_type', status: 400, details: { event_type: 'warehouse.fire is not in the allowlist' }
  })
})

t.test('not JSON, or not an object', async t => {
  t.throws(() => parseEnvelope('{', allow), { code: 'validation_error', details: { envelope: 'must be valid JSON' } })
  t.throws(() => parseEnvelope('[1]', allow), { code: 'validation_error', details: { envelope: 'must be a JSON object' } })
})

t.test('a bad device_id is reported with every other problem at once', async t => {
  t.same(details({ ...base, event_type: undefined, subject: { device_id: 'cam\n' } }), { eventType: 'is required', 'subject.deviceId': 'must not contain control characters' })
})

t.test('subject.client_id: the caller\'s own, or another with stream:write:any-client, else 403', async t => {
  const named = (clientId?: string) => parseEnvelope(JSON.stringify({ ...base, subject: { device_id: 'cam-3', ...(clientId ? { client_id: clientId } : {}) } }), allow)
  t.equal(publishingClientId(named(), 'cam-7', 'stream:write'), 'cam-7', 'no override: the caller')
  t.equal(publishingClientId(named('cam-7'), 'cam-7', 'stream:write'), 'cam-7', 'naming oneself is no override')
  t.equal(publishingClientId(named('other'), 'bridge', 'stream:write stream:write:any-client'), 'other', 'with the scope: the named client')
  t.throws(() => publishingClientId(named('other'), 'cam-7', 'stream:write stream:write:any-clientx'), {
    code: 'forbidden', status: 403, details: { 'subject.clientId': "may name only the token's own client_id without scope stream:write:any-client" }
  })
})

t.test('an envelope that is not an object is keyed envelope, and only so', async t => {
  for (const value of [[], 'text', 7, null]) t.strictSame(details(value), { envelope: 'must be a JSON object' }, JSON.stringify(value))
})

t.test('an envelope that would not publish as it was validated is refused before the schema: a key twice, a number JSON cannot hold, nesting too deep', async t => {
  const text = JSON.stringify(base)
  const refusal = (body: string): unknown => {
    try {
      parseEnvelope(body, allow)
      return 'accepted'
    } catch (err) {
      return { code: (err as { code: string }).code, details: (err as { details: unknown }).details }
    }
  }
  t.same(refusal(`{"event_type":"warehouse.dock.forklift",${text.slice(1)}`), { code: 'validation_error', details: { eventType: 'is given more than once' } }, 'the second event_type would win in one parser and lose in another')
  t.same(refusal(text.replace('}}', '},"attributes":{"reading":1e309}}')), { code: 'validation_error', details: { 'attributes.reading': 'must be a finite number (JSON has no Infinity)' } })
  t.same(refusal(text.replace('}}', `},"attributes":${'['.repeat(40)}${']'.repeat(40)}}`)), { code: 'validation_error', details: { envelope: 'must not nest deeper than 32 levels' } }, 'the whole envelope, keyed as its part')
})
