import t from 'tap'
import '../helpers/no-keepalive.js'
import { runGateway } from '../helpers/child.js'
import { startTestGateway } from '../helpers/gateway.js'

async function loginStatus (url: string, clientId: string, secret: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/login`, {
    method: 'POST',
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: clientId, client_secret: secret, audience: 'evidence-gateway' })
  })
  return res.status
}

t.test('clients add, list, rotate and remove, seen by a running service', async t => {
  const { url, dataDir } = await startTestGateway(t)
  const env = { DATA_DIR: dataDir }

  const added = await runGateway(['clients', 'add', 'cam-7', '--audience', 'evidence-gateway', '--scope', 'stream:write', '--tenant', 'acme'], env)
  t.equal(added.code, 0, added.stderr)
  const created = JSON.parse(added.stdout) as { client_id: string, client_secret: string, tenant: string }
  t.equal(created.client_id, 'cam-7')
  t.equal(created.tenant, 'acme')
  t.ok(created.client_secret.length >= 40, 'the secret is shown once, at creation')
  t.equal(await loginStatus(url, 'cam-7', created.client_secret), 200, 'the running service sees the new client')

  const listed = await runGateway(['clients', 'list'], env)
  t.equal(listed.code, 0)
  t.notMatch(listed.stdout, created.client_secret, 'list never shows a secret')
  t.notMatch(listed.stdout, /scrypt\$/, 'nor a hash')
  t.match(listed.stdout, /"client_id":"cam-7"/)

  const again = await runGateway(['clients', 'add', 'cam-7', '--audience', 'a', '--scope', 's'], env)
  t.equal(again.code, 1)
  t.match(again.stderr, /client cam-7 exists/)

  const rotated = JSON.parse((await runGateway(['clients', 'rotate', 'cam-7'], env)).stdout) as { client_secret: string }
  t.not(rotated.client_secret, created.client_secret)
  t.equal(await loginStatus(url, 'cam-7', created.client_secret), 401, 'the old secret no longer works')
  t.equal(await loginStatus(url, 'cam-7', rotated.client_secret), 200)

  t.equal((await runGateway(['clients', 'remove', 'cam-7'], env)).code, 0)
  t.equal(await loginStatus(url, 'cam-7', rotated.client_secret), 401, 'a removed client cannot log in')
  t.equal((await runGateway(['clients', 'remove', 'cam-7'], env)).code, 1)
})

t.test('clients hash prints a hash AUTH_CLIENTS_FILE accepts', async t => {
  const hashed = await runGateway(['clients', 'hash'], {}, 'my-secret\n')
  t.equal(hashed.code, 0)
  const hash = hashed.stdout.trim()
  t.match(hash, /^scrypt\$32768\$8\$1\$[\w-]+\$[\w-]+$/)
  const { url } = await startTestGateway(t, {}, [{ client_id: 'h1', client_secret_hash: hash, audiences: ['evidence-gateway'], scopes: ['stream:write'] }])
  t.equal(await loginStatus(url, 'h1', 'my-secret'), 200)
  t.equal(await loginStatus(url, 'h1', 'other'), 401)
})

t.test('usage errors exit 2 with the usage', async t => {
  const res = await runGateway(['clients', 'add'], { DATA_DIR: t.testdir() })
  t.equal(res.code, 2)
  t.match(res.stderr, /usage:/)
})
