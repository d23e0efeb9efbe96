import t from 'tap'
import { createServer } from 'node:net'
import '../helpers/no-keepalive.js'
import { launchBrowser, openPage, timelineSeqs } from '../helpers/browser.js'
import { spawnGateway } from '../helpers/child.js'

const SOON = { timeout: 20_000 }

/**
 * A free port below Linux's ephemeral range (32768 and up). The gateway comes
 * back on the port it had; one from the ephemeral range can be taken while it
 * is down, even by the browser's own reconnects (a connection to a port that
 * no one listens on can be given that same port as its source: a TCP self-connect).
 */
async function portBelowEphemeral (): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000)
    const server = createServer()
    const free = await new Promise<boolean>(resolve => {
      server.once('error', () => resolve(false))
      server.listen(port, '127.0.0.1', () => resolve(true))
    })
    if (free) {
      await new Promise(resolve => server.close(resolve))
      return port
    }
  }
}

t.test('a gateway killed mid-run: the run page says it is reconnecting, then resumes its stream without a duplicate or a gap', async t => {
  const dir = t.testdir()
  const ports = { PORT: String(await portBelowEphemeral()), HARNESS_PORT: String(await portBelowEphemeral()) }
  const first = spawnGateway(t, ['start'], { DATA_DIR: dir, ...ports })
  await first.waitFor('gateway listening')
  const url = `http://127.0.0.1:${ports.HARNESS_PORT}`
  const started = await fetch(`${url}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'long', mode: 'echo', options: { steps: 500, delay_ms: 100 } }) })
  const { run_id: id } = await started.json() as { run_id: string }

  const browser = await launchBrowser(t)
  const runPage = await openPage(browser, t)
  await runPage.goto(`${url}/console/runs/${id}`)
  const listPage = await openPage(browser, t)
  await listPage.goto(`${url}/console`)
  await listPage.waitForSelector(`#runs [data-run-id="${id}"][data-status=running]`, SOON)
  await runPage.waitForSelector('#timeline li[data-seq="6"]', SOON)

  first.proc.kill('SIGKILL')
  await first.exit
  await runPage.waitForSelector('#conn[data-state=reconnecting]', SOON)
  await listPage.waitForSelector('#conn[data-state=reconnecting]', SOON)
  t.pass('both pages say they are reconnecting')
  const before = await timelineSeqs(runPage)

  const second = spawnGateway(t, ['start'], { DATA_DIR: dir, ...ports })
  await second.waitFor('gateway listening')
  await runPage.waitForSelector('#run-status:text-is("failed")', SOON)
  await runPage.waitForSelector('#conn[data-state=ended]', SOON)
  const seqs = await timelineSeqs(runPage)
  const record = await (await fetch(`${url}/runs/${id}`)).json() as { last_event_id: number, error: { code: string } }
  t.equal(record.error.code, 'interrupted', 'the restart ended the run as interrupted')
  t.same(seqs, Array.from({ length: record.last_event_id }, (_, i) => i + 1), 'every event of the run once, in order: none repeated, none lost')
  t.same(seqs.slice(0, before.length), before, 'what was shown before the drop stayed as it was')
  t.equal(await runPage.getAttribute('#timeline', 'data-received'), String(seqs.length), 'and the stream itself sent none twice: it resumed after Last-Event-ID')
  t.equal(await runPage.textContent(`#timeline li[data-seq="${record.last_event_id}"] .type`), 'run.failed')

  // The list's watch comes back too: the new process says reset, the list is read again, and goes on live.
  await listPage.waitForSelector(`#runs [data-run-id="${id}"][data-status=failed]`, SOON)
  const again = await (await fetch(`${url}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'after', mode: 'echo' }) })).json() as { run_id: string }
  await listPage.waitForSelector(`#runs [data-run-id="${again.run_id}"]`, SOON)
  t.pass('the list shows runs of the new process live')
})
