import t from 'tap'
import '../helpers/no-keepalive.js'
import { launchBrowser, openPage } from '../helpers/browser.js'
import { login, startTestGateway, writeJson } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { freePort, selfTrustingHarness } from '../helpers/ports.js'

const SOON = { timeout: 15_000 }

/** Harness auth on, trusting this gateway's own keys; orgs acme and initech behind the front door. */
async function setup (t: any) {
  const port = await freePort()
  const orgs = writeJson(t.testdir(), 'orgs.json', { acme: { tenant: 'acme-t', members: ['web-user'] }, initech: { tenant: 'initech-t', members: ['initech-user'] } })
  const gw = await startTestGateway(t, {
    ...selfTrustingHarness(port, orgs)
  }, [
    { client_id: 'web-user', client_secret: 'web-secret', audiences: ['harness'], scopes: ['runs'] },
    { client_id: 'initech-user', client_secret: 'i-secret', audiences: ['harness'], scopes: ['runs'] }
  ])
  await eventually(() => fetch(`${gw.harnessUrl}/health/ready`).then(r => r.status), s => s === 200)
  const acme = await login(gw.url, { client_id: 'web-user', client_secret: 'web-secret' }, 'harness')
  const initech = await login(gw.url, { client_id: 'initech-user', client_secret: 'i-secret' }, 'harness')
  const door = (slug: string): string => `${gw.url}/api/v1/orgs/${slug}/harness`
  const start = async (slug: string, token: string, message: string): Promise<string> => {
    const res = await fetch(`${door(slug)}/runs:start`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ message, mode: 'echo' }) })
    return ((await res.json()) as { run_id: string }).run_id
  }
  return { ...gw, acme, initech, door, start }
}

t.test('through the front door with harness auth on: the console asks for a token, then shows the org\'s runs and no other tenant\'s', async t => {
  const { door, acme, initech, start } = await setup(t)
  const browser = await launchBrowser(t)
  const page = await openPage(browser, t)
  await page.goto(`${door('acme')}/console`)
  await page.waitForSelector('#login[open]', SOON)
  t.match(await page.textContent('#login-why'), /missing Bearer token/, 'it says why')
  t.ok(await page.isHidden('#login-tenant-label'), 'no tenant to give: the front door sets the org\'s')
  await page.fill('#login-token', acme)
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#conn[data-state=live]', SOON)
  t.equal(await page.evaluate(() => (globalThis as any).sessionStorage.getItem('console.token')), acme, 'kept in the tab\'s session storage')

  const theirs = await start('initech', initech, 'initech secret')
  const mine = await start('acme', acme, 'acme run')
  await page.waitForSelector(`#runs [data-run-id="${mine}"]`, SOON)
  // The feed is one sequence: had initech's run reached this watch, it would have come before acme's.
  t.equal(await page.$$eval('#runs .row', rows => rows.length), 1, 'only the org\'s own run')
  t.equal(await page.$(`#runs [data-run-id="${theirs}"]`), null, 'the other tenant\'s run is not shown')
  await page.reload()
  await page.waitForSelector(`#runs [data-run-id="${mine}"]`, SOON)
  t.equal(await page.$(`#runs [data-run-id="${theirs}"]`), null, 'nor after listing again')

  await page.goto(`${door('acme')}/console/runs/${theirs}`)
  await page.waitForSelector('#run-error', SOON)
  t.equal(await page.textContent('#run-error'), 'This run belongs to another tenant.')
  t.equal(await page.$$eval('#timeline li', items => items.length), 0, 'and none of its events')
})

t.test('on the harness port with auth on: the prompt asks for the token and the tenant, and a bad token asks again', async t => {
  const { harnessUrl, acme, start } = await setup(t)
  const mine = await start('acme', acme, 'acme run')
  const browser = await launchBrowser(t)
  const page = await openPage(browser, t)
  await page.goto(`${harnessUrl}/console`)
  await page.waitForSelector('#login[open]', SOON)
  t.ok(await page.isVisible('#login-tenant'), 'the harness port needs the tenant too')
  await page.fill('#login-token', 'not-a-token')
  await page.fill('#login-tenant', 'acme-t')
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector('#login[open]', SOON)
  t.match(await page.textContent('#login-why'), /refused: auth_failed:malformed/)
  await page.fill('#login-token', acme)
  await page.click('#login-form button[type=submit]')
  await page.waitForSelector(`#runs [data-run-id="${mine}"]`, SOON)
  t.pass('the list with the token and tenant given')
})
