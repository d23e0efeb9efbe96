import t from 'tap'
import fc from 'fast-check'
import { randomUUID } from 'node:crypto'
import { isStorageId } from '../../src/validation/index.js'
import { mutate, mutation, render, type Mutation, type Path } from './support/json.js'
import { contentTypeOf, envelopePart, faultyParts, framing, GOOD_BOUNDARY, mediaPart, multipart, partsFault, sha256, type Framing, type PartsFault } from './support/multipart.js'
import { describe, judge, params, seedLine, Tally, type RouteRule } from './support/property.js'
import { extraHeaders, framed, framing as bodyFraming, requestId, withHeader } from './support/requests.js'
import { DEVICE, startTarget, TOPICS } from './support/target.js'
import type { Header } from './support/wire.js'

/**
 * POST /v1/stream/events with generated envelopes and multipart framing:
 * every answer is a 202 or a 4xx in the evidence shape, never a 5xx, a hang
 * or a crash; exactly the accepted events are published and their media
 * stored, and a refused event_id is free for the next request.
 */
const RULE: RouteRule = { dialect: 'evidence', ok: [202], bearerChallenge: true }
const MAX_MEDIA = 4
const tally = new Tally('POST /v1/stream/events (envelopes, multipart)')
console.log(`# ${seedLine('test/attack/evidence.test.ts')}`)
t.teardown(() => tally.record())

const PATHS: Path[] = [
  ['schema_version'], ['event_type'], ['event_id'], ['occurred_at'], ['ended_at'], ['severity'], ['subject'], ['subject', 'device_id'],
  ['subject', 'client_id'], ['subject', 'zone_id'], ['detections'], ['detections', 0, 'class'], ['detections', 0, 'score'],
  ['detections', 0, 'bbox'], ['detections', 0, 'bbox', 3], ['media'], ['media', 0], ['media', 0, 'checksum_sha256'],
  ['media', 0, 'duration_seconds'], ['media', 0, 'source'], ['media', 0, 'ref'], ['attributes'], ['attributes', 'plate'], ['client_id'], ['received_at']
]

const request = fc.record({
  eventId: fc.oneof({ weight: 8, arbitrary: fc.uuid().map(u => `evt-${u}`) }, { weight: 1, arbitrary: fc.constantFrom('evt-pool-1', 'evt-pool-2') }),
  media: fc.array(fc.record({ size: fc.integer({ min: 0, max: 4096 }), hint: fc.constantFrom('checksum', 'checksum', 'none', 'none', 'wrong') }), { maxLength: 3 }),
  mutations: fc.oneof(fc.constant<Mutation[]>([]), fc.array(mutation(PATHS), { minLength: 1, maxLength: 3 })),
  fault: partsFault,
  framing,
  body: bodyFraming,
  requestId: fc.oneof(fc.constant(undefined), requestId),
  extra: extraHeaders
})

type Attempt = typeof request extends fc.Arbitrary<infer R> ? R : never

const SOUND_FRAMING: Framing = { declared: GOOD_BOUNDARY, used: GOOD_BOUNDARY, lineEnd: '\r\n', noBlankLine: false, preamble: '', epilogue: '', closing: true, truncate: undefined }
const PARTS_FAULTS: PartsFault[] = ['media-first', 'second-envelope', 'no-envelope', 'unknown-name', 'no-disposition', 'unquoted-name', 'huge-part-header', 'many-part-headers', 'media-type',
  'too-many-media', 'envelope-type', 'empty-envelope', 'header-injection', 'no-parts', 'header-no-colon', 'two-dispositions', 'nul-in-header', 'filename-path', 'boundary-in-media']
const BROKEN_FRAMINGS: Array<Partial<Framing>> = [
  { declared: undefined }, { declared: '' }, { declared: `"${GOOD_BOUNDARY}"` }, { declared: 'x'.repeat(71) }, { declared: 'x'.repeat(5000) }, { declared: '"unterminated' },
  { used: 'other-boundary' }, { used: GOOD_BOUNDARY.slice(0, -1) }, { lineEnd: '\n' }, { noBlankLine: true }, { closing: false },
  { preamble: `--${GOOD_BOUNDARY}x\r\n` }, { epilogue: `\r\n--${GOOD_BOUNDARY}\r\n` }, { truncate: 0 }, { truncate: 0.3 }, { truncate: 0.7 }, { truncate: 0.999 }
]

t.test('stream events: generated envelopes and framing get a 202 or a 4xx in the evidence shape; exactly the 202s are stored and published', async t => {
  const target = await startTarget(t, { EVIDENCE_MAX_MEDIA: String(MAX_MEDIA) })
  const accepted: Array<{ eventId: string, media: number }> = []
  const everAccepted = new Set<string>()
  const refusedIds = new Set<string>()
  const attempt = async (r: Attempt): Promise<void> => {
    const files = r.media.map(m => Buffer.alloc(m.size, m.size % 251))
    const hints = r.media.map((m, i) => m.hint === 'checksum' ? { checksum_sha256: sha256(files[i]!) } : m.hint === 'wrong' ? { checksum_sha256: '0'.repeat(64) } : { ref: `clip-${i}` })
    const base = { schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: r.eventId, occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' }, media: hints }
    const envelope = r.mutations.reduce((v, m) => mutate(v, m), base as unknown)
    const parts = faultyParts(envelopePart(render(envelope)), files.map(f => mediaPart(f)), r.fault, MAX_MEDIA)
    let headers: Header[] = [['Authorization', `Bearer ${target.device}`], ['Content-Type', contentTypeOf(r.framing)]]
    headers = withHeader(headers, 'X-Request-Id', r.requestId)
    headers.push(...r.extra)
    const req = framed({ method: 'POST', target: '/v1/stream/events', headers }, multipart(parts, r.framing), r.body.framing, r.body.cuts)
    const outcome = await target.send(target.port, req)
    tally.count(outcome)
    const problem = judge(RULE, outcome)
    if (problem !== undefined) throw new Error(`${problem}\n  request: ${describe(req)}`)
    if (outcome.kind !== 'answer') return
    const sentId = (envelope as { event_id?: unknown })?.event_id
    if (outcome.status === 202) {
      const ack = outcome.json as { event_id: string, media_count: number }
      everAccepted.add(ack.event_id)
      if (outcome.headers['idempotent-replay'] !== 'true') accepted.push({ eventId: ack.event_id, media: ack.media_count })
    } else {
      if (isStorageId(sentId)) refusedIds.add(sentId)
    }
  }
  await fc.assert(fc.asyncProperty(request, attempt), params(150))

  // Each way of breaking the parts and the framing at least once a run, whatever the seed drew.
  const sound = { eventId: '', media: [{ size: 1000, hint: 'checksum' as const }], mutations: [], fault: 'none' as PartsFault, framing: SOUND_FRAMING, body: { framing: 'length' as const, cuts: [] }, requestId: undefined, extra: [] }
  for (const fault of PARTS_FAULTS) await attempt({ ...sound, eventId: `evt-${randomUUID()}`, fault })
  for (const broken of BROKEN_FRAMINGS) await attempt({ ...sound, eventId: `evt-${randomUUID()}`, framing: { ...SOUND_FRAMING, ...broken } })
  await attempt({ ...sound, eventId: `evt-${randomUUID()}`, body: { framing: 'chunked', cuts: [0.1, 0.5, 0.9] } })

  t.equal(await tally.survived(target), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
  await target.settled()
  const published = await target.published(TOPICS.evidence)
  const acceptedIds = new Set(accepted.map(a => `${DEVICE.client_id}/${a.eventId}`))
  tally.storedAfterRefusal += published.filter(m => !acceptedIds.has(m.headers['message-id']!)).length
  t.same(published.map(m => m.headers['message-id']).sort(), [...acceptedIds].sort(), 'one envelope per accepted event, none for a refused or replayed one')
  const objects = target.objects()
  t.same(objects.filter(o => o.startsWith('.partial')), [], 'no partial file left')
  t.equal(objects.length, accepted.reduce((n, a) => n + a.media, 0), 'as many objects as the accepted events\' media')
  tally.storedAfterRefusal += Math.max(0, objects.length - accepted.reduce((n, a) => n + a.media, 0))

  // A refused request leaves its event_id free: the next request with it is stored, not a replay, not 409.
  const probes = [...refusedIds].filter(id => !everAccepted.has(id)).slice(0, 10)
  for (const id of probes) {
    const body = multipart([envelopePart(JSON.stringify({ schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: id, occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' } }))], { declared: 'b', used: 'b', lineEnd: '\r\n', noBlankLine: false, preamble: '', epilogue: '', closing: true, truncate: undefined })
    const res = await target.send(target.port, { method: 'POST', target: '/v1/stream/events', headers: [['Authorization', `Bearer ${target.device}`], ['Content-Type', 'multipart/form-data; boundary=b']], body })
    t.same(res.kind === 'answer' ? [res.status, res.headers['idempotent-replay']] : res.kind, [202, undefined], `the refused event_id ${id} is free`)
  }
})
