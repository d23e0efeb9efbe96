import t from 'tap'
import { randomUUID } from 'node:crypto'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, CLIENT } from '../helpers/gateway.js'
import { startIdp, IDP_ISSUER } from '../helpers/jwks.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence } from '../helpers/multipart.js'
import { settled } from '../helpers/settle.js'
import { tailBus } from '../helpers/child.js'

const AUDIENCE = 'evidence-gateway'
const CB = { client_id: 'cB', client_secret: 'cb-secret', audiences: [AUDIENCE], scopes: ['stream:write', 'asset:track:write'] }
const BRIDGE = { client_id: 'bridge', client_secret: 'bridge-secret', audiences: [AUDIENCE], scopes: ['stream:write', 'stream:write:any-client'] }

/** Identifiers an attacker would try: traversal, another tenant's prefix, too long, dot-dot, NUL, a lone surrogate. */
const escape = `gw-escape-${randomUUID()}`
const HOSTILE: Array<[string, string]> = [
  ['traversal out of DATA_DIR', `../../../../../../../../tmp/${escape}`],
  ['into another prefix', 'cA/../cB'],
  ['300 characters', 'a'.repeat(300)],
  ['dot-dot', '..'],
  ['a NUL', 'cam\u0000x'],
  ['a lone surrogate', 'cam\ud800']
]

async function setup (t: any) {
  const idp = await startIdp(t)
  const gw = await startTestGateway(t, { IDP_ISSUER, IDP_JWKS_URL: idp.jwksUrl }, [CB, BRIDGE])
  const objectsRoot = join(gw.dataDir, 'objects')
  const objects = (): string[] => existsSync(objectsRoot)
    ? readdirSync(objectsRoot, { recursive: true, withFileTypes: true }).filter(d => d.isFile()).map(d => join(d.parentPath, d.name).slice(objectsRoot.length + 1)).sort()
    : []
  const published = () => tailBus(gw.dataDir, 'stream.events.v1')
  const idpToken = (claims: Record<string, unknown>) => idp.sign({ scope: 'stream:write asset:track:write', ...claims }, { aud: AUDIENCE })
  const outside = [join(tmpdir(), escape), join('/tmp', escape), join(gw.dataDir, '..', escape)]
  t.teardown(() => { for (const p of outside) rmSync(p, { recursive: true, force: true }) })
  const escaped = () => outside.some(p => existsSync(p))
  return { ...gw, idp, objects, published, idpToken, escaped }
}

t.test('a token whose client_id or tenant is no storage id is 403 on both routes, before anything is stored', async t => {
  const { url, objects, published, idpToken, escaped, dataDir } = await setup(t)
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-hostile' })), mediaPart(clip(10_000).data)])
  for (const [name, id] of HOSTILE) {
    for (const claim of ['client_id', 'tenant'] as const) {
      const token = await idpToken(claim === 'client_id' ? { client_id: id } : { client_id: 'fine', tenant: id })
      const res = await postEvidence(url, token, body)
      t.equal(res.status, 403, `${claim} ${name}: 403`)
      t.same(res.body, { status: 'error', code: 'forbidden', details: { authorization: `${claim} claim must be 1 to 128 ASCII letters, digits, ".", "_", ":", "@" or "-", starting with a letter or digit (docs/identifiers.md)` } }, `${claim} ${name}: body`)
      const track = await fetch(`${url}/v1/asset/track`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': randomUUID(), 'x-request-timestamp': String(Math.floor(Date.now() / 1000)) },
        body: JSON.stringify({ asset_id: 'truck-1', timestamp: new Date().toISOString() })
      })
      t.equal(track.status, 403, `${claim} ${name}: telemetry 403 too`)
    }
  }
  t.same(objects(), [], 'nothing under DATA_DIR/objects')
  t.notOk(escaped(), 'nothing outside DATA_DIR')
  t.same(await published(), [], 'no evidence published')
  t.same(await tailBus(dataDir, 'asset.telemetry.v1'), [], 'no telemetry published')
})

t.test('hostile event_id, subject.client_id and subject.device_id are 400 with their keys, nothing stored or published', async t => {
  const { url, objects, published, escaped } = await setup(t)
  const bridge = await login(url, BRIDGE)
  const idKeyed: Array<[string, (v: string) => Record<string, unknown>]> = [
    ['eventId', v => baseEnvelope({ event_id: v })],
    ['subject.clientId', v => baseEnvelope({ subject: { device_id: 'cam-3', client_id: v } })]
  ]
  for (const [key, envelope] of idKeyed) {
    for (const [name, value] of HOSTILE) {
      const res = await postEvidence(url, bridge, multipartBody([envelopePart(envelope(value)), mediaPart(clip(5_000).data)]))
      t.equal(res.status, 400, `${key} ${name}: 400`)
      // The text policy of every route comes first: a lone surrogate is refused as text before any grammar.
      const message = value.includes('\ud800') ? 'must be well-formed Unicode (no lone surrogates)' : 'must be 1 to 128 ASCII letters, digits, ".", "_", ":", "@" or "-", starting with a letter or digit'
      t.same(res.body, { status: 'error', code: 'validation_error', details: { [key]: message } }, `${key} ${name}: body`)
    }
  }
  const labels: Array<[string, string, string]> = [
    ['a NUL', 'cam\u0000x', 'must not contain control characters'],
    ['a newline', 'cam\nx-injected: 1', 'must not contain control characters'],
    ['a C1 control', 'cam\u0085', 'must not contain control characters'],
    ['a lone surrogate', 'cam\ud800', 'must be well-formed Unicode (no lone surrogates)'],
    ['empty', '', 'must not be empty'],
    ['300 characters', 'd'.repeat(300), 'must be at most 256 characters']
  ]
  for (const [name, value, message] of labels) {
    const res = await postEvidence(url, bridge, multipartBody([envelopePart(baseEnvelope({ subject: { device_id: value } })), mediaPart(clip(5_000).data)]))
    t.same([res.status, res.body], [400, { status: 'error', code: 'validation_error', details: { 'subject.deviceId': message } }], `device_id ${name}`)
  }
  t.same(objects(), [], 'nothing stored')
  t.notOk(escaped(), 'nothing outside DATA_DIR')
  t.same(await published(), [], 'nothing published')
  const fine = await postEvidence(url, bridge, multipartBody([envelopePart(baseEnvelope({ event_id: 'cam3:2026-11-22.001@site-a', subject: { device_id: 'Kamera Süd 3 📷' } }))]))
  t.equal(fine.status, 202, 'a storage id with every allowed punctuation, and a Unicode label, pass')
})

t.test('a tenant is (issuer, client_id): the IdP\'s cB cannot pre-claim the local cB\'s event_id', async t => {
  const { url, objects, published, idpToken } = await setup(t)
  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '/')
  const body = multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-E' })), mediaPart(clip(20_000).data)])

  const foreign = await postEvidence(url, await idpToken({ client_id: 'cB' }), body)
  t.equal(foreign.status, 202, 'the IdP token of client cB uploads E')
  t.equal(foreign.headers.get('idempotent-replay'), null)

  const local = await postEvidence(url, await login(url, CB), body)
  t.equal(local.status, 202, 'the local cB uploads E')
  t.equal(local.headers.get('idempotent-replay'), null, 'a fresh upload, not a replay of the IdP\'s')

  const again = await postEvidence(url, await idpToken({ client_id: 'cB' }), body)
  t.equal(again.headers.get('idempotent-replay'), 'true', 'each namespace still replays its own')

  const [localKey, foreignKey, ...rest] = objects()
  t.equal(localKey, `cB/${day}/evt-E/0.mp4`, 'the local cB keeps the spec\'s prefix')
  t.match(foreignKey, new RegExp(`^cB~[0-9a-f]{12}/${day}/evt-E/0\\.mp4$`), 'the IdP\'s cB has a prefix of its own')
  t.same(rest, [])
  // settled fails on a third, however late it comes.
  const messages = await settled(published, 2)
  t.same(messages.map(m => [m.value.client_id, m.value.issuer, m.headers['client-id'], m.key]).sort(), [
    ['cB', 'http://127.0.0.1:8080/', 'cB', 'cB/cam-3'],
    ['cB', IDP_ISSUER, 'cB', 'cB/cam-3']
  ], 'client_id stays the token\'s; issuer tells the two apart')
})

t.test('subject.client_id overrides only with stream:write:any-client; the prefix stays the uploader\'s', async t => {
  const { url, objects, published } = await setup(t)
  const day = new Date().toISOString().slice(0, 10).replace(/-/g, '/')
  const fleet = await login(url, CLIENT)
  const other = baseEnvelope({ event_id: 'evt-as-other', subject: { device_id: 'cam-3', client_id: 'cB' } })

  const refused = await postEvidence(url, fleet, multipartBody([envelopePart(other), mediaPart(clip(10_000).data)]))
  t.same([refused.status, refused.body], [403, { status: 'error', code: 'forbidden', details: { 'subject.clientId': 'may name only the token\'s own client_id without scope stream:write:any-client' } }])
  t.same(objects(), [], 'nothing stored')
  t.same(await published(), [], 'nothing published')

  const self = await postEvidence(url, fleet, multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-self', subject: { device_id: 'cam-3', client_id: CLIENT.client_id } }))]))
  t.equal(self.status, 202, 'naming one\'s own client_id is no override')

  const bridge = await postEvidence(url, await login(url, BRIDGE), multipartBody([envelopePart(other), mediaPart(clip(10_000).data)]))
  t.equal(bridge.status, 202, 'a client with stream:write:any-client may')
  t.same(objects(), [`bridge/${day}/evt-as-other/0.mp4`], 'stored under the uploader\'s prefix, never under subject.client_id')
  // Exactly two (evt-self and evt-as-other): the refused upload never reaches the bus, even late.
  const messages = await settled(published, 2)
  const m = messages.find(x => x.value.event_id === 'evt-as-other')!
  t.same([m.value.client_id, m.key, m.headers['client-id']], ['cB', 'cB/cam-3', 'cB'], 'published as the named client')
  t.match(m.value.media[0].uri, new RegExp(`/objects/bridge/${day}/evt-as-other/0\\.mp4$`))
})
