import t from 'tap'
import type { RequestContext } from '../../src/http/index.js'
import { serve } from '../helpers/http.js'
import { startTestGateway, login } from '../helpers/gateway.js'

/** Counts the bytes of a streamed body. */
async function count (ctx: RequestContext): Promise<{ status: number, body: unknown }> {
  let bytes = 0
  for await (const chunk of ctx.stream!) bytes += chunk.length
  return { status: 200, body: { bytes } }
}

t.test('a stream route reads an empty body when the request has none (found by the attack suite)', async t => {
  const { url } = await serve(t, [{ method: 'POST', path: '/upload', body: 'stream', handler: count }])
  for (const init of [{ body: '' }, {}]) {
    const res = await fetch(`${url}/upload`, { method: 'POST', ...init })
    t.same([res.status, await res.json()], [200, { bytes: 0 }], `body ${JSON.stringify(init)}`)
  }
  const some = await fetch(`${url}/upload`, { method: 'POST', body: 'abc' })
  t.same(await some.json(), { bytes: 3 }, 'a body is read as before')
})

t.test('an evidence POST without a body is the 400 for a missing envelope, not a 500', async t => {
  const { url } = await startTestGateway(t)
  const token = await login(url)
  for (const contentType of ['multipart/form-data; boundary=b', 'multipart/form-data; boundary=']) {
    const res = await fetch(`${url}/v1/stream/events`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, body: '' })
    t.equal(res.status, 400, contentType)
    t.match(await res.json(), { status: 'error', code: 'validation_error' })
  }
})
