import t from 'tap'
import '../helpers/no-keepalive.js'
import { runGateway, spawnGateway } from '../helpers/child.js'
import { startTestGateway, writeJson } from '../helpers/gateway.js'

async function loginStatus (url: string, clientId: string, secret: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
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

t.test('clients add refuses an id or tenant that could not be a storage prefix', async t => {
  const env = { DATA_DIR: t.testdir() }
  for (const [args, message] of [
    [['../../tmp/x'], /client_id "\.\.\/\.\.\/tmp\/x" must be 1 to 128 ASCII letters/],
    [['cA/../cB'], /client_id "cA\/\.\.\/cB" must be/],
    [['..'], /client_id "\.\." must be/],
    [['a'.repeat(300)], /client_id "a{300}" must be/],
    [['cam\u0001'], /client_id "cam\\u0001" must be/],
    [['cam-8', '--tenant', 'a/b'], /tenant "a\/b" of client cam-8 must be/]
  ] as const) {
    const res = await runGateway(['clients', 'add', ...args, '--audience', 'a', '--scope', 's'], env)
    t.not(res.code, 0, `${args[0].slice(0, 20)}: refused`)
    t.match(res.stderr, message)
    t.match(res.stderr, /docs\/identifiers\.md/)
  }
  t.equal((await runGateway(['clients', 'list'], env)).stdout, '', 'nothing was stored')
})

t.test('AUTH_CLIENTS_FILE with a client_id or tenant outside the grammar stops start-up with a clear message', async t => {
  const dir = t.testdir()
  for (const [entry, message] of [
    [{ client_id: '../../../tmp/x' }, /AUTH_CLIENTS_FILE .*: client_id "\.\.\/\.\.\/\.\.\/tmp\/x" must be 1 to 128 ASCII letters, digits/],
    [{ client_id: 'cam-9', tenant: 'acme/../other' }, /AUTH_CLIENTS_FILE .*: tenant "acme\/\.\.\/other" of client cam-9 must be/]
  ] as const) {
    const file = writeJson(dir, 'clients.json', [{ client_secret: 'x', audiences: ['a'], scopes: ['s'], ...entry }])
    const gw = spawnGateway(t, ['start'], { DATA_DIR: dir, AUTH_CLIENTS_FILE: file })
    const outcome = await Promise.race([gw.exit, gw.waitFor('gateway listening').then(() => 'listening', () => 'exited')])
    t.equal(outcome, 1, 'exits 1 before listening')
    t.match(gw.stderr(), message)
  }
})
