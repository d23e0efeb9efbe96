import t from 'tap'
import { browserGuard } from '../../src/http/index.js'

const verdict = (guard: ReturnType<typeof browserGuard>, method: string, headers: Record<string, string>): string => guard(method, headers)?.message ?? 'ok'

t.test('Host: IP literals and localhost always; other names only when listed, or with *', async t => {
  const none = browserGuard({ hosts: [], origins: [] })
  for (const host of ['127.0.0.1', '127.0.0.1:8081', '10.0.0.7:1', '[::1]:8081', '[fe80::1]', 'localhost', 'LOCALHOST:8081', 'app.localhost:3000']) {
    t.equal(verdict(none, 'GET', { host }), 'ok', host)
  }
  for (const host of ['evil.example', 'evil.example:8081', '127.0.0.1.nip.io', 'localhost.evil.example', '1.2.3.4.evil', '0x7f000001']) {
    t.equal(verdict(none, 'GET', { host }), 'host_not_allowed', host)
  }
  t.equal(verdict(none, 'GET', {}), 'ok', 'no Host (HTTP/1.0): nothing a browser sends')
  const listed = browserGuard({ hosts: ['Gateway.Internal'], origins: [] })
  t.equal(verdict(listed, 'GET', { host: 'gateway.internal:8081' }), 'ok')
  t.equal(verdict(listed, 'GET', { host: 'other.internal' }), 'host_not_allowed')
  t.equal(verdict(browserGuard({ hosts: ['*'], origins: [] }), 'GET', { host: 'anything.example' }), 'ok')
})

t.test('Origin: the request\'s own (same Host) or a listed one; null and others refused', async t => {
  const guard = browserGuard({ hosts: ['*'], origins: ['https://console.example/'] })
  const json = { 'content-type': 'application/json' }
  t.equal(verdict(guard, 'POST', { host: 'gw:8081', origin: 'http://gw:8081', ...json }), 'ok')
  t.equal(verdict(guard, 'POST', { host: 'gw:8081', origin: 'https://console.example', ...json }), 'ok')
  t.equal(verdict(guard, 'POST', { host: 'gw:8081', origin: 'http://gw:8082', ...json }), 'origin_not_allowed', 'another port is another origin')
  t.equal(verdict(guard, 'POST', { host: 'gw:8081', origin: 'null', ...json }), 'origin_not_allowed')
  t.equal(verdict(guard, 'GET', { host: 'gw:8081', origin: 'https://evil.example' }), 'origin_not_allowed', 'a cross-origin GET too')
})

t.test('a POST needs a JSON type or a header no cross-origin page can send without a preflight', async t => {
  const guard = browserGuard({ hosts: ['*'], origins: [] })
  const refused = 'unsupported_media_type: Content-Type must be application/json'
  for (const type of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx']) {
    t.equal(verdict(guard, 'POST', type === undefined ? {} : { 'content-type': type }), refused, String(type))
    t.equal(verdict(guard, 'GET', type === undefined ? {} : { 'content-type': type }), 'ok', `GET with ${type}`)
  }
  for (const headers of [{ 'content-type': 'application/json; charset=utf-8' }, { authorization: 'Bearer x' }, { 'x-svc-tenant-client-id': 'acme' }] as Array<Record<string, string>>) {
    t.equal(verdict(guard, 'POST', headers), 'ok', JSON.stringify(headers))
  }
  t.same(guard('POST', {})?.headers, { 'accept-post': 'application/json' })
})
