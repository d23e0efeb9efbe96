import t from 'tap'
import { Router } from '../../src/http/index.js'

t.test('static, parameter and wildcard routes', async t => {
  const r = new Router<string>()
  r.add('POST', '/runs', 'create')
  r.add('POST', '/runs:start', 'start')
  r.add('GET', '/runs/{id}', 'get')
  r.add('GET', '/runs/{id}/stream', 'stream')
  r.add('GET', '/api/v1/orgs/{slug}/harness/*', 'frontdoor')

  t.same(r.find('POST', '/runs:start'), { value: 'start', params: {} }, 'a colon is literal, not a parameter')
  t.same(r.find('POST', '/runs'), { value: 'create', params: {} })
  t.same(r.find('GET', '/runs/r-1'), { value: 'get', params: { id: 'r-1' } })
  t.same(r.find('GET', '/runs/a%2Fb/stream'), { value: 'stream', params: { id: 'a/b' } }, 'parameters are decoded')
  t.same(r.find('GET', '/api/v1/orgs/acme/harness/runs/x/stream'), { value: 'frontdoor', params: { slug: 'acme', '*': 'runs/x/stream' } })
  t.equal(r.find('GET', '/runs/'), undefined, 'an empty parameter does not match')
  t.equal(r.find('GET', '/runs/%E0%A4%A'), undefined, 'a malformed escape does not match')
  t.equal(r.find('GET', '/nothing'), undefined)
})

t.test('a known path with another method gives the methods it has, for the 405\'s Allow', async t => {
  const r = new Router<string>()
  r.add('POST', '/runs:start', 'start')
  r.add('GET', '/runs/{id}', 'get')
  r.add('POST', '/runs/{id}', 'replace')
  r.add('GET', '/health', 'health')
  t.same(r.find('GET', '/runs:start'), { allowed: ['POST'] })
  t.same(r.find('DELETE', '/runs/1'), { allowed: ['GET', 'POST'] })
  t.same(r.find('HEAD', '/health'), { allowed: ['GET'] }, 'HEAD has no route of its own (docs/http.md)')
})

t.test('duplicate static routes are refused', async t => {
  const r = new Router<string>()
  r.add('GET', '/a', 'x')
  t.throws(() => r.add('GET', '/a', 'y'), /duplicate route GET \/a/)
  t.throws(() => r.add('GET', 'a', 'y'), /must start with/)
})
