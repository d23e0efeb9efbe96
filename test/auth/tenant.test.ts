import t from 'tap'
import { tenantKey, issuerTag, ISSUER_SEPARATOR } from '../../src/auth/index.js'
import { isStorageId } from '../../src/validation/index.js'

const LOCAL = 'http://127.0.0.1:8080/'

t.test('this service\'s own tokens keep the bare client_id; another issuer\'s are namespaced', async t => {
  t.equal(tenantKey('cB', LOCAL, LOCAL), 'cB')
  t.equal(tenantKey('cB', 'https://idp.test/', LOCAL), `cB~${issuerTag('https://idp.test/')}`)
  t.not(tenantKey('cB', 'https://idp.test/', LOCAL), tenantKey('cB', 'https://other-idp.test/', LOCAL), 'two issuers, two namespaces')
})

t.test('the issuer tag is short, stable and path-safe', async t => {
  t.equal(issuerTag('https://idp.test/'), issuerTag('https://idp.test/'))
  t.match(issuerTag('https://idp.test/'), /^[0-9a-f]{12}$/)
  t.not(issuerTag('https://idp.test/'), issuerTag('https://idp.test'), 'the exact iss string counts, as jose compares it')
})

t.test('no client_id of the grammar can spell another issuer\'s key', async t => {
  t.equal(ISSUER_SEPARATOR, '~')
  t.notOk(isStorageId(`cB~${issuerTag('https://idp.test/')}`), 'a local client cannot be named like a namespaced one')
})
