import t from 'tap'
import { loadOrgs } from '../../src/frontdoor/index.js'
import { writeJson } from '../helpers/gateway.js'

t.test('an org tenant must be a storage identifier: the harness would refuse any other in its header', async t => {
  const dir = t.testdir()
  t.equal(loadOrgs(writeJson(dir, 'good.json', { acme: { tenant: 'acme-t', members: ['u'] } })).get('acme')?.tenant, 'acme-t')
  for (const tenant of ['', '../acme', 'acme/x', 'acme x', ' acme', 'a'.repeat(129)]) {
    t.throws(() => loadOrgs(writeJson(dir, 'bad.json', { acme: { tenant, members: ['u'] } })), { name: 'ConfigError', message: /ORGS_FILE .*\/acme\/tenant must match pattern/ }, JSON.stringify(tenant))
  }
})
