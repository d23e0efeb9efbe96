import t from 'tap'
import { createRemoteJWKSet, jwtVerify, decodeProtectedHeader } from 'jose'
import '../helpers/no-keepalive.js'
import { startTestGateway, CLIENT } from '../helpers/gateway.js'

const good = { grant_type: 'client_credentials', client_id: CLIENT.client_id, client_secret: CLIENT.client_secret, audience: 'evidence-gateway' }

async function post (url: string, body: unknown, raw?: string): Promise<{ status: number, body: any, headers: Headers }> {
  const res = await fetch(`${url}/api/v1/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw ?? JSON.stringify(body) })
  return { status: res.status, body: await res.json(), headers: res.headers }
}

t.test('a good login returns a token that verifies with jose against the JWKS', async t => {
  const { url } = await startTestGateway(t)
  const res = await post(url, good)
  t.equal(res.status, 200)
  t.same(Object.keys(res.body).sort(), ['access_token', 'expires_in', 'scope', 'token_type'])
  t.equal(res.body.token_type, 'Bearer')
  t.equal(res.body.expires_in, 86400)
  t.equal(res.body.scope, 'asset:track:write stream:write')
  t.equal(res.headers.get('cache-control'), 'no-store')

  const jwks = createRemoteJWKSet(new URL(`${url}/.well-known/jwks.json`))
  const { payload, protectedHeader } = await jwtVerify(res.body.access_token, jwks, { issuer: 'http://127.0.0.1:8080/', audience: 'evidence-gateway', algorithms: ['RS256'] })
  t.equal(protectedHeader.alg, 'RS256')
  t.type(protectedHeader.kid, 'string')
  t.equal(payload.sub, CLIENT.client_id)
  t.equal(payload['client_id'], CLIENT.client_id)
  t.equal(payload['tenant'], 'acme')
  t.equal(payload['scope'], 'asset:track:write stream:write')
  t.equal(payload.exp! - payload.iat!, 86400)
})

t.test('400 names each missing or malformed field', async t => {
  const { url } = await startTestGateway(t)
  for (const field of ['client_id', 'client_secret', 'audience'] as const) {
    const missing = await post(url, { ...good, [field]: undefined })
    t.equal(missing.status, 400, `${field} missing`)
    t.same(missing.body, { error: 'invalid_request', error_description: `${field} is required` })
    const malformed = await post(url, { ...good, [field]: 42 })
    t.equal(malformed.status, 400, `${field} malformed`)
    t.same(malformed.body, { error: 'invalid_request', error_description: `${field} must be a string` })
  }
  const noGrant = await post(url, { ...good, grant_type: undefined })
  t.same([noGrant.status, noGrant.body], [400, { error: 'invalid_request', error_description: 'grant_type is required' }])
  const twoMissing = await post(url, { grant_type: 'client_credentials', client_id: 'x' })
  t.same(twoMissing.body.error_description, 'client_secret is required; audience is required', 'all problems at once')
  const notObject = await post(url, [1, 2])
  t.same([notObject.status, notObject.body], [400, { error: 'invalid_request', error_description: 'request body must be a JSON object' }])
  const notJson = await post(url, undefined, 'client_id=x')
  t.same([notJson.status, notJson.body], [400, { error: 'invalid_request', error_description: 'request body is not valid JSON' }])
})

t.test('another grant type is unsupported_grant_type', async t => {
  const { url } = await startTestGateway(t)
  const res = await post(url, { ...good, grant_type: 'password' })
  t.equal(res.status, 400)
  t.same(res.body, { error: 'unsupported_grant_type', error_description: 'grant_type "password" is not supported; use client_credentials' })
})

t.test('a wrong client_id and a wrong secret get the same 401', async t => {
  const { url } = await startTestGateway(t)
  const wrongId = await post(url, { ...good, client_id: 'nobody' })
  const wrongSecret = await post(url, { ...good, client_secret: 'nope' })
  t.equal(wrongId.status, 401)
  t.equal(wrongSecret.status, 401)
  t.same(wrongId.body, { error: 'access_denied', error_description: 'unauthorized client credentials' })
  t.same(wrongSecret.body, wrongId.body, 'nothing tells which part was wrong')
})

t.test('a client_id outside the identifier grammar is the same 401, never a 500', async t => {
  const { url } = await startTestGateway(t)
  for (const id of ['x'.repeat(5000), '../../x', 'cA/../cB', 'nul\u0000', '..']) {
    const res = await post(url, { ...good, client_id: id })
    t.same([res.status, res.body], [401, { error: 'access_denied', error_description: 'unauthorized client credentials' }], id.slice(0, 20))
  }
  const lone = await post(url, { ...good, client_id: 'lone\ud800' })
  t.match([lone.status, lone.body], [400, { error: 'invalid_request' }], 'a lone surrogate is no text: the one JSON policy refuses it before any lookup')
})

t.test('an audience the client may not use is 403 access_denied', async t => {
  const { url } = await startTestGateway(t)
  const res = await post(url, { ...good, audience: 'billing-api' })
  t.equal(res.status, 403)
  t.same(res.body, { error: 'access_denied', error_description: 'client is not authorized for audience billing-api' })
})

t.test('the token kid is one the JWKS publishes', async t => {
  const { url } = await startTestGateway(t)
  const { body } = await post(url, good)
  const jwks = await (await fetch(`${url}/.well-known/jwks.json`)).json() as { keys: Array<{ kid: string, alg: string, use: string, kty: string, d?: string }> }
  const kid = decodeProtectedHeader(body.access_token).kid
  const key = jwks.keys.find(k => k.kid === kid)
  t.ok(key)
  t.equal(key?.alg, 'RS256')
  t.equal(key?.d, undefined, 'no private part is published')
})
