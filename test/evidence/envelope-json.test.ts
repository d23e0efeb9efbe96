import t from 'tap'
import '../helpers/no-keepalive.js'
import { tailBus } from '../helpers/child.js'
import { startTestGateway, login } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { multipartBody, postEvidence } from '../helpers/multipart.js'

const base = '"schema_version":"1.0","event_type":"warehouse.restricted_zone.person","occurred_at":"2026-11-22T08:00:00Z","subject":{"device_id":"cam-3"}'
const envelope = (eventId: string, rest: string): Buffer => multipartBody([{ name: 'envelope', contentType: 'application/json', data: `{${base},"event_id":"${eventId}"${rest}}` }])
const nested = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`

t.test('an envelope is refused when it would not serialise back to what was validated (the deep one was a 500, found by the attack suite)', async t => {
  const { url, dataDir } = await startTestGateway(t)
  const token = await login(url)
  const cases: Array<[string, string, Record<string, string>]> = [
    ['evt-deep', `,"attributes":{"a":${nested(10_000)}}`, { envelope: 'must not nest deeper than 32 levels' }],
    ['evt-33', `,"attributes":{"a":${nested(32)}}`, { envelope: 'must not nest deeper than 32 levels' }],
    ['evt-inf', ',"attributes":{"x":1e309}', { 'attributes.x': 'must be a finite number (JSON has no Infinity)' }],
    ['evt-dup', ',"subject":{"device_id":"cam-9"}', { subject: 'is given more than once' }]
  ]
  for (const [id, rest, details] of cases) {
    const res = await postEvidence(url, token, envelope(id, rest))
    t.same([res.status, res.body], [400, { status: 'error', code: 'validation_error', details }], id)
  }
  const ok = await postEvidence(url, token, envelope('evt-31', `,"attributes":{"a":${nested(30)}}`))
  t.equal(ok.status, 202, '32 levels in all (the envelope, attributes and 30 arrays) are accepted')
  const retry = await postEvidence(url, token, envelope('evt-deep', ''))
  t.same([retry.status, retry.headers.get('idempotent-replay')], [202, null], 'the refused event_id was never claimed for good')
  const published = await eventually(() => tailBus(dataDir, 'stream.events.v1'), m => m.length >= 2)
  t.same(published.map(m => m.value.event_id).sort(), ['evt-31', 'evt-deep'], 'only the accepted envelopes are published')
})
