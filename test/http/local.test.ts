import t from 'tap'
import { refusal } from '../../src/errors.js'
import { LATER, serveLocal, type RequestContext, type Route } from '../../src/http/index.js'
import { serve } from '../helpers/http.js'

/**
 * serveLocal: a route of one server serves, in-process, what a route of
 * another admitted, as that server would: its authorize and handler see
 * the forwarded view, its body limit holds, its answer (a reply, LATER, an
 * error, a stream) reaches the caller.
 */
async function pair (t: any, inner: Route[]) {
  const { server: other } = await serve(t, inner, { defaultBodyLimit: 8 })
  const { url } = await serve(t, [
    { method: 'GET', path: '/door/*', handler: ctx => forward(ctx) },
    { method: 'POST', path: '/door/*', body: 'json', handler: ctx => forward(ctx) }
  ])
  function forward (ctx: RequestContext) {
    const path = `/${ctx.params['*']!}`
    return serveLocal(ctx, other.local(ctx.method, path)!, { path, query: 'q=1', headers: { 'x-who': 'the door' } })
  }
  return url
}

t.test('the other route sees the forwarded path, query, headers and params, not the caller\'s', async t => {
  const seen: unknown[] = []
  const url = await pair(t, [{
    method: 'GET',
    path: '/items/{id}',
    authorize: async ctx => ctx.headers['x-who'],
    handler: (ctx, who) => { seen.push([ctx.path, ctx.query, ctx.params, who, ctx.headers['x-caller']]); return { status: 200, body: { ok: true }, headers: { 'retry-after': '3' } } }
  }])
  const res = await fetch(`${url}/door/items/a1?caller=1`, { headers: { 'x-caller': 'me' } })
  t.same([res.status, res.headers.get('retry-after'), await res.json()], [200, '3', { ok: true }])
  t.same(seen, [['/items/a1', 'q=1', { id: 'a1' }, 'the door', undefined]])
})

t.test('an answer given later, an error of authorize, and the other route\'s body limit', async t => {
  const url = await pair(t, [
    { method: 'GET', path: '/later', handler: ctx => { setImmediate(() => ctx.settle({ status: 201, body: 'later' })); return LATER } },
    { method: 'GET', path: '/refused', authorize: async () => { throw refusal('too_many_streams', { headers: { 'retry-after': '5' } }) }, handler: () => ({ status: 200 }) },
    { method: 'POST', path: '/small', body: 'json', handler: ctx => ({ status: 200, body: ctx.json() }) }
  ])
  const later = await fetch(`${url}/door/later`)
  t.same([later.status, await later.text()], [201, 'later'])
  const refused = await fetch(`${url}/door/refused`)
  t.same([refused.status, refused.headers.get('retry-after')], [429, '5'])
  const small = await fetch(`${url}/door/small`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1]' })
  t.same([small.status, await small.json()], [200, [1]])
  const big = await fetch(`${url}/door/small`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1,2,3,4,5]' })
  t.equal(big.status, 413, 'the other server\'s limit (8 bytes), though the door\'s own is 1 MiB')
})

t.test('a stream of the other route is written to the caller\'s response', async t => {
  const url = await pair(t, [{
    method: 'GET',
    path: '/stream',
    handler: ctx => {
      ctx.writeHead(200, { 'content-type': 'text/event-stream' })
      ctx.write('data: one\n\n')
      setImmediate(() => ctx.end('data: two\n\n'))
      return undefined
    }
  }])
  const res = await fetch(`${url}/door/stream`)
  t.same([res.headers.get('content-type'), await res.text()], ['text/event-stream', 'data: one\n\ndata: two\n\n'])
})
