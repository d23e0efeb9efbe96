import t from 'tap'
import '../helpers/no-keepalive.js'
import { startTestGateway, CLIENT } from '../helpers/gateway.js'

const good = { grant_type: 'client_credentials', client_id: CLIENT.client_id, client_secret: CLIENT.client_secret, audience: 'evidence-gateway' }

async function post (url: string, body: unknown, raw?: string, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<{ status: number, body: any, headers: Headers }> {
  const res = await fetch(`${url}/api/v1/login`, { method: 'POST', headers, body: raw ?? JSON.stringify(body) })
  return { status: res.status, body: await res.json(), headers: res.headers }
}

const form = (fields: Record<string, string>): string => new URLSearchParams(fields).toString()
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

// One gateway for the file: none of these tests fails a login often enough to be rate limited.
const { url } = await startTestGateway(t)

t.test('form fields log in as OAuth clients send them; a repeated field is invalid_request', async t => {
  const res = await post(url, undefined, form(good), FORM)
  t.equal(res.status, 200)
  t.equal(res.body.token_type, 'Bearer')
  const charset = await post(url, undefined, form(good), { 'content-type': 'Application/X-WWW-Form-Urlencoded; charset=UTF-8' })
  t.equal(charset.status, 200, 'the media type is case-insensitive and takes parameters')
  const twice = await post(url, undefined, `${form(good)}&client_id=other`, FORM)
  t.same([twice.status, twice.body], [400, { error: 'invalid_request', error_description: 'client_id is given more than once' }])
  const wrong = await post(url, undefined, form({ ...good, client_secret: 'nope' }), FORM)
  t.same([wrong.status, wrong.body.error], [401, 'access_denied'])
})

t.test('a JSON body that gives a key twice is invalid_request, as a repeated form field is: a proxy may read the other copy', async t => {
  const json = JSON.stringify(good)
  const twice = await post(url, undefined, `${json.slice(0, -1)},"audience":"other-aud"}`)
  t.same([twice.status, twice.body], [400, { error: 'invalid_request', error_description: 'audience is given more than once' }])
  const first = await post(url, undefined, `{"client_id":"other",${json.slice(1)}`)
  t.same([first.status, first.body], [400, { error: 'invalid_request', error_description: 'client_id is given more than once' }])
  t.equal((await post(url, good)).status, 200, 'each key once logs in')
})

t.test('a body of another Content-Type, or none, is 415 with Accept-Post', async t => {
  const json = JSON.stringify(good)
  for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'text/plain;charset=UTF-8' }, { 'content-type': 'application/jsonx' }, { 'content-type': 'multipart/form-data; boundary=x' }, {}] as Array<Record<string, string>>) {
    const res = await fetch(`${url}/api/v1/login`, { method: 'POST', headers, body: Buffer.from(json) })
    t.equal(res.status, 415, JSON.stringify(headers))
    t.same(await res.json(), { error: 'invalid_request', error_description: 'Content-Type must be application/json or application/x-www-form-urlencoded' })
    t.equal(res.headers.get('accept-post'), 'application/json, application/x-www-form-urlencoded')
  }
})
