import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { launchBrowser, openPage, timelineSeqs } from '../helpers/browser.js'
import { login, startTestGateway } from '../helpers/gateway.js'

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))

/** Waits for the console to see the change: a bound with a clear failure, never a timing assertion (the machine may be slow). */
const SOON = { timeout: 15_000 }

async function start (url: string, body: object): Promise<string> {
  const res = await fetch(`${url}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return ((await res.json()) as { run_id: string }).run_id
}

t.test('the console in a real browser, on the harness port', async t => {
  const gw = await startTestGateway(t)
  const url = gw.harnessUrl
  const browser = await launchBrowser(t)

  await t.test('the list shows a run started through the API, and its status as it changes', async t => {
    const page = await openPage(browser, t)
    await page.goto(`${url}/console`)
    await page.waitForSelector('#conn[data-state=live]', SOON)
    const id = await start(url, { message: 'started through the API', mode: 'echo', options: { steps: 3, delay_ms: 300 } })
    await page.waitForSelector(`#runs [data-run-id="${id}"]`, SOON)
    await page.waitForSelector(`#runs [data-run-id="${id}"][data-status=succeeded]`, SOON)
    t.pass('appeared, then succeeded, without a reload')
    await page.uncheck('input[name=status][value=succeeded]')
    await page.waitForSelector(`#runs [data-run-id="${id}"]`, { ...SOON, state: 'detached' })
    t.pass('filtered out by status')
    await page.check('input[name=status][value=succeeded]')
    await page.waitForSelector(`#runs [data-run-id="${id}"]`, SOON)
    await page.close()
  })

  await t.test('a run\'s page shows its steps arrive live, with ids and times, and ends on the terminal status', async t => {
    const id = await start(url, { message: 'watch me', mode: 'echo', options: { steps: 20, delay_ms: 500 } })
    const page = await openPage(browser, t)
    await page.goto(`${url}/console/runs/${id}`)
    await page.waitForSelector('#timeline li[data-type="echo.step"]', SOON)
    const early = await timelineSeqs(page)
    await page.waitForSelector('#run-status:text-is("succeeded")', SOON)
    await page.waitForSelector('#conn[data-state=ended]', SOON)
    const seqs = await timelineSeqs(page)
    t.ok(early.length < seqs.length, `steps arrived while the page was open (${early.length} then ${seqs.length})`)
    t.same(seqs, Array.from({ length: 23 }, (_, i) => i + 1), 'queued, started, twenty steps, completed: each once, in order')
    t.equal(await page.textContent('#timeline li[data-seq="23"] .type'), 'run.completed')
    t.equal(await page.getAttribute('#timeline', 'data-received'), '23', 'none sent twice')
    t.equal(await page.textContent('#timeline li[data-seq="3"] .seq'), '#3')
    t.match(await page.getAttribute('#timeline li[data-seq="3"] time', 'datetime'), /^\d{4}-\d\d-\d\dT/)
    t.ok(await page.isDisabled('#cancel'), 'nothing to cancel once it ended')
    await page.close()
  })

  await t.test('cancel from the run\'s page cancels the run', async t => {
    const id = await start(url, { message: 'cancel me', mode: 'echo', options: { steps: 200, delay_ms: 200 } })
    const page = await openPage(browser, t)
    await page.goto(`${url}/console/runs/${id}`)
    await page.waitForSelector('#timeline li[data-type="echo.step"]', SOON)
    await page.click('#cancel')
    await page.waitForSelector('#run-status:text-is("cancelled")', SOON)
    const record = await (await fetch(`${url}/runs/${id}`)).json() as { status: string }
    t.equal(record.status, 'cancelled')
    await page.waitForSelector('#timeline li[data-type="run.failed"]', SOON)
    await page.close()
  })

  await t.test('a thousand runs: only the rows in view are drawn, and scrolling pages through them all', async t => {
    const ids: string[] = []
    for (let i = 0; i < 1000; i += 100) ids.push(...await Promise.all(Array.from({ length: 100 }, (_, j) => start(url, { message: `bulk ${i + j}`, mode: 'echo' }))))
    const page = await openPage(browser, t)
    await page.goto(`${url}/console`)
    await page.waitForSelector(`#runs [data-run-id="${ids.at(-1)}"]`, SOON)
    t.ok(await page.$$eval('#runs .row', rows => rows.length) < 60, 'a screenful of rows in the document, not a thousand')
    // Scrolled to the bottom again and again: each time the next page is fetched, until the oldest run is in view.
    // (The page's globals through globalThis: the tests are compiled without the DOM's types. A function, not
    // text: playwright would evaluate text with eval, which the console's Content-Security-Policy forbids.)
    await page.waitForFunction((oldest: string) => {
      const doc = (globalThis as any).document
      const list = doc.getElementById('runs')
      list.scrollTop = list.scrollHeight
      return doc.querySelector(`#runs [data-run-id="${oldest}"]`) !== null
    }, ids[0]!, { polling: 100, timeout: 60_000 })
    t.pass('the oldest run is reached by scrolling')
    t.ok(await page.$$eval('#runs .row', rows => rows.length) < 60, 'still a screenful after scrolling through them')
    await page.close()
  })

  await t.test('a screenshot of the console', async t => {
    await start(url, { message: 'no model configured', mode: 'agentic' })
    const slow = await start(url, { message: 'a long echo, still running', mode: 'echo', options: { steps: 400, delay_ms: 100 } })
    const page = await openPage(browser, t)
    await page.goto(`${url}/console`)
    await page.waitForSelector(`#runs [data-run-id="${slow}"][data-status=running]`, SOON)
    // Telemetry for a few seconds, so the ingest panel has a line to draw.
    const token = await login(gw.url)
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-timestamp': '1' }
    for (let second = 0; second < 5; second++) {
      await Promise.all(Array.from({ length: 10 + second * 8 }, (_, i) => fetch(`${gw.url}/v1/asset/track`, { method: 'POST', headers: { ...headers, 'x-request-id': `shot-${second}-${i}` }, body: JSON.stringify({ ...example, asset_id: `a${i % 5}` }) })))
      await page.waitForTimeout(1000)
    }
    await page.waitForSelector('[data-metric=gateway_telemetry_records_total] polyline[points*=","]', SOON)
    const png = await page.screenshot()
    t.ok(png.length > 10_000, 'a picture of the page')
    // CONSOLE_SCREENSHOT=docs/console.png refreshes the one in the README.
    const to = process.env['CONSOLE_SCREENSHOT']
    if (to) writeFileSync(to, png)
    await page.close()
  })
})
