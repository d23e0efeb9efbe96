import t from 'tap'
import fc from 'fast-check'
import { Members, mutate, mutation, render, type Mutation, type Path } from './support/json.js'
import { describe, judge, params, seedLine, Tally, type RouteRule } from './support/property.js'
import { extraHeaders, framed, framing, mostly, spoil, spoiled, withHeader } from './support/requests.js'
import { DEVICE, INGEST_AUDIENCE, OTHER_DEVICE, READER, startTarget, TOPICS } from './support/target.js'
import type { Header } from './support/wire.js'

/**
 * POST /api/v1/login with generated JSON and form bodies: every answer is a
 * 200 with a token or an OAuth error (400, 401, 403, 415, 429), never a 5xx,
 * a hang or a crash, and a login stores and publishes nothing.
 */
const RULE: RouteRule = { dialect: 'oauth', ok: [200] }
const tally = new Tally('POST /api/v1/login')
console.log(`# ${seedLine('test/attack/login.test.ts')}`)
t.teardown(() => tally.record())

const PATHS: Path[] = [['client_id'], ['client_secret'], ['audience'], ['grant_type'], ['scope']]
const CLIENTS = [DEVICE, OTHER_DEVICE, READER]

/** A form body of the same fields; a Members object gives a parameter twice. */
function form (value: unknown): string {
  const members = value instanceof Members ? value.members : typeof value === 'object' && value !== null ? Object.entries(value) : []
  return members.map(([k, v]) => `${percent(k)}=${percent(typeof v === 'string' ? v : render(v))}`).join('&')
}

/** Percent-encoding that also writes a lone surrogate (as its WTF-8 bytes), which encodeURIComponent refuses. */
function percent (text: string): string {
  return [...text].map(ch => {
    const cu = ch.charCodeAt(0)
    if (ch.length === 1 && cu >= 0xd800 && cu <= 0xdfff) return [0xe0 | (cu >> 12), 0x80 | ((cu >> 6) & 0x3f), 0x80 | (cu & 0x3f)].map(b => `%${b.toString(16).toUpperCase()}`).join('')
    return encodeURIComponent(ch)
  }).join('')
}

const request = fc.record({
  client: fc.constantFrom(...CLIENTS),
  rightSecret: mostly(true, fc.constant(false)),
  mutations: fc.oneof(fc.constant<Mutation[]>([]), fc.array(mutation(PATHS), { minLength: 1, maxLength: 3 })),
  encoding: fc.constantFrom('json', 'json', 'form'),
  contentType: mostly<string | undefined>(undefined, fc.constantFrom('text/plain', 'application/jsonx', 'multipart/form-data; boundary=x', '', 'application/x-www-form-urlencoded; charset=utf-8', 'APPLICATION/JSON')),
  spoil,
  framing,
  forwardedFor: mostly<string | undefined>(undefined, fc.constantFrom('10.0.0.1', '10.0.0.1, 10.0.0.2', '', '::1', 'x'.repeat(300))),
  extra: extraHeaders
})

t.test('login: generated JSON and form bodies get a 200 or an OAuth error; nothing is stored or published', async t => {
  const target = await startTarget(t)
  await fc.assert(fc.asyncProperty(request, async r => {
    const body = { grant_type: 'client_credentials', client_id: r.client.client_id, client_secret: r.rightSecret ? r.client.client_secret : 'wrong-secret', audience: INGEST_AUDIENCE }
    const value = r.mutations.reduce((v, m) => mutate(v, m), body as unknown)
    const text = r.encoding === 'json' ? render(value) : form(value)
    let headers: Header[] = [['Content-Type', r.contentType ?? (r.encoding === 'json' ? 'application/json' : 'application/x-www-form-urlencoded')]]
    headers = withHeader(headers, 'X-Forwarded-For', r.forwardedFor)
    headers.push(...r.extra)
    const req = framed({ method: 'POST', target: '/api/v1/login', headers }, spoiled(text, r.spoil), r.framing.framing, r.framing.cuts)
    const outcome = await target.send(target.port, req)
    tally.count(outcome)
    const problem = judge(RULE, outcome)
    if (problem !== undefined) throw new Error(`${problem}\n  request: ${describe(req)}`)
    if (outcome.kind !== 'answer') return
    if (outcome.status === 200) {
      const token = outcome.json as { access_token?: unknown, token_type?: unknown }
      if (typeof token.access_token !== 'string' || token.token_type !== 'Bearer') throw new Error(`a 200 without a bearer token: ${outcome.text}`)
    }
  }), params(120))

  t.equal(await tally.survived(target), undefined, 'the gateway still answers /health on both ports')
  t.same(target.errors(), [], 'nothing logged at error level')
  const objects = target.objects()
  tally.storedAfterRefusal += objects.length
  t.same(objects, [], 'nothing stored')
  for (const topic of Object.values(TOPICS)) {
    const published = await target.published(topic)
    tally.storedAfterRefusal += published.length
    t.same(published, [], `nothing published on ${topic}`)
  }
})
