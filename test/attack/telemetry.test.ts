import t from 'tap'
import fc from 'fast-check'
import { readFileSync } from 'node:fs'
import { mutate, mutation, render, type Mutation, type Path } from './support/json.js'
import { describe, judge, params, seedLine, Tally, type RouteRule } from './support/property.js'
import { contentTypes, extraHeaders, framed, framing, mostly, requestId, spoil, spoiled, withHeader } from './support/requests.js'
import { DEVICE, startTarget, TOPICS } from './support/target.js'
import type { Header } from './support/wire.js'

/**
 * POST /v1/asset/track with generated bodies and headers: every answer is a
 * 200 or a 4xx in the telemetry shape, never a 5xx, a hang or a crash, and
 * the bus holds exactly one message per 200, by its message-id.
 */
const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))
const RULE: RouteRule = { dialect: 'telemetry', ok: [200], bearerChallenge: true }
const tally = new Tally('POST /v1/asset/track')
console.log(`# ${seedLine('test/attack/telemetry.test.ts')}`)
t.teardown(() => tally.record())

const PATHS: Path[] = [
  ['asset_id'], ['timestamp'], ['type'], ['owner'], ['year'], ['gps'], ['gps', 'latitude'], ['gps', 'longitude'], ['gps', 'altitude'],
  ['gps', 'speed'], ['gps', 'heading'], ['gps', 'accuracy'], ['telecom'], ['sensors'], ['sensors', 'acceleration', 'x_axis'],
  ['sensors', 'acceleration', 'g_force'], ['sensors', 'gyroscope', 'rotation_rate_z'], ['sensors', 'odometer'], ['sensors', 'engine_status'],
  ['driver_info'], ['peripherals'], ['metrics'], ['metrics', 'schema'], ['metrics', 'items'], ['metrics', 'items', 0], ['metrics', 'items', 0, 'k'],
  ['metrics', 'items', 0, 'v'], ['metrics', 'items', 0, 'ts'], ['metrics', 'items', 0, 'src'], ['metrics', 'items', 0, 'q'],
  ['metrics', 'items', 0, 'meta'], ['metrics', 'seq'], ['metrics', 'device_ts'], ['events'], ['events', 0], ['events', 0, 'event_type'],
  ['events', 0, 'timestamp'], ['events', 0, 'severity'], ['events', 0, 'threshold_exceeded'], ['events', 0, 'additional_info', 'g_force'],
  ['events', 0, 'additional_info', 'speed_at_event'], ['events', 0, 'additional_info', 'cargo_weight'], ['firmware'], ['client_id'], ['received_at']
]

const request = fc.record({
  mutations: fc.oneof(fc.constant<Mutation[]>([]), fc.array(mutation(PATHS), { minLength: 1, maxLength: 3 })),
  spoil,
  framing,
  contentType: contentTypes('application/json'),
  requestId,
  timestamp: mostly<string | undefined>('1732262400', fc.constantFrom('1', '0', '', '-1', '1.5', '9'.repeat(12), '9'.repeat(13), 'now', undefined)),
  extra: extraHeaders
})

t.test('asset track: generated bodies and headers get a 200 or a 4xx in the telemetry shape; the bus holds exactly the 200s', async t => {
  const target = await startTarget(t)
  const accepted: string[] = []
  await fc.assert(fc.asyncProperty(request, async r => {
    const record = r.mutations.reduce((v, m) => mutate(v, m), example as unknown)
    let headers: Header[] = [['Authorization', `Bearer ${target.device}`]]
    headers = withHeader(headers, 'Content-Type', r.contentType)
    headers = withHeader(headers, 'X-Request-Id', r.requestId)
    headers = withHeader(headers, 'X-Request-Timestamp', r.timestamp)
    headers.push(...r.extra)
    const req = framed({ method: 'POST', target: '/v1/asset/track', headers }, spoiled(render(record), r.spoil), r.framing.framing, r.framing.cuts)
    const outcome = await target.send(target.port, req)
    tally.count(outcome)
    const problem = judge(RULE, outcome)
    if (problem !== undefined) throw new Error(`${problem}\n  request: ${describe(req)}`)
    if (outcome.kind === 'answer' && outcome.status === 200) accepted.push(outcome.headers['x-request-id']!)
  }), params(150))

  t.equal(await tally.survived(target), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
  const published = (await target.published(TOPICS.telemetry)).map(m => m.headers['message-id'])
  const acceptedIds = new Set(accepted.map(id => `${DEVICE.client_id}/${id}`))
  tally.storedAfterRefusal += published.filter(id => !acceptedIds.has(id!)).length + target.objects().length
  t.same(published.sort(), accepted.map(id => `${DEVICE.client_id}/${id}`).sort(), 'one message per 200, by message-id, and none for a refused request')
  t.same(target.objects(), [], 'nothing stored')
})
