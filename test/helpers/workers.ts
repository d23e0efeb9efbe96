/** Supervised workers (WORKERS=2) under load, as test/ops/workers*.test.ts drive them. */
import type { Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { spawnGateway, type Child } from './child.js'
import { CLIENT, login, writeJson } from './gateway.js'

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))

/** Resolves once `count` log lines satisfy `pred`; fails the wait after `ms`. */
async function lines (gw: Child, pred: (l: Record<string, unknown>) => boolean, what: string, count = 1, ms = 60_000): Promise<Array<Record<string, unknown>>> {
  const deadline = Date.now() + ms
  for (;;) {
    const found = gw.lines.filter(pred)
    if (found.length >= count) return found
    if (gw.proc.exitCode !== null) throw new Error(`gateway exited before ${what}: ${gw.stderr()}`)
    if (Date.now() > deadline) throw new Error(`no log line: ${what}`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

async function metrics (port: number): Promise<string> {
  return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
}

function value (text: string, series: string): number | undefined {
  const found = text.split('\n').find(l => l.startsWith(series + ' '))
  return found === undefined ? undefined : Number(found.slice(series.length + 1))
}

/**
 * Sends telemetry on fresh connections (so the kernel spreads them over the
 * workers) from four loops until `stop()`; records the request id of every 200.
 */
function flow (port: number, token: string): { ok: Set<string>, failed: () => number, stop: () => Promise<void> } {
  const ok = new Set<string>()
  let failed = 0
  let running = true
  let n = 0
  const loop = async (): Promise<void> => {
    while (running) {
      const id = `req-${n++}-${randomUUID()}`
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v1/asset/track`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': id, 'x-request-timestamp': '1763799330' },
          body: JSON.stringify({ ...example, asset_id: `asset-${n % 8}` })
        })
        await res.arrayBuffer()
        if (res.status === 200) ok.add(id)
        else failed++
      } catch {
        // The connection a killed worker held: the client sees an error, never a 200.
        failed++
      }
    }
  }
  const loops = Promise.all([loop(), loop(), loop(), loop()])
  return { ok, failed: () => failed, stop: async () => { running = false; await loops } }
}

/** Waits until `count` more 200s were recorded. */
async function answered (ok: Set<string>, count: number): Promise<void> {
  const target = ok.size + count
  const deadline = Date.now() + 60_000
  while (ok.size < target) {
    if (Date.now() > deadline) throw new Error(`only ${ok.size} of ${target} answered 200`)
    await new Promise(resolve => setTimeout(resolve, 50))
  }
}

/**
 * WORKERS=2 (PORT=0) with telemetry flowing: /metrics covers both workers; one worker killed -9, the supervisor
 * restarts it, SIGTERM drains both. Returns the request ids answered 200.
 */
export async function killOneWorker (t: Test, dir: string, env: Record<string, string>): Promise<Set<string>> {
  const clients = writeJson(dir, 'clients.json', [CLIENT])
  const gw = spawnGateway(t, ['start', '--workers', '2'], { DATA_DIR: dir, AUTH_CLIENTS_FILE: clients, ...env })
  const { port } = await gw.waitFor('workers listening') as { port: number }
  t.not(port, 0, 'PORT=0 became one real port, shared by both workers')
  const first = await lines(gw, l => l['msg'] === 'gateway listening', 'both workers listening', 2)
  t.same(first.map(l => l['port']), [port, port], 'both workers listen on it')

  for (let i = 0; i < 20; i++) await (await fetch(`http://127.0.0.1:${port}/health`)).arrayBuffer()
  const before = await metrics(port)
  t.equal(value(before, 'gateway_http_requests_total{server="gateway",method="GET",route="/health",status="200"}'), 20, '/metrics sums the requests of both workers')
  t.match(before, /process_start_time_seconds\{worker="1"\}/, 'a start time is per worker, not summed')
  t.match(before, /process_start_time_seconds\{worker="2"\}/)

  const traffic = flow(port, await login(`http://127.0.0.1:${port}`))
  await answered(traffic.ok, 40)
  const victim = first.find(l => l['worker'] === 1)!['pid'] as number
  process.kill(victim, 'SIGKILL')
  const [died] = await lines(gw, l => l['msg'] === 'worker died', 'worker died')
  t.match(died, { worker: 1, pid: victim, signal: 'SIGKILL' }, 'the supervisor saw the worker die')
  const [back] = await lines(gw, l => l['msg'] === 'gateway listening' && l['worker'] === 1 && l['pid'] !== victim, 'worker 1 back')
  t.equal(back!['port'], port, 'the new worker listens on the same port')
  await answered(traffic.ok, 40)
  await traffic.stop()

  const text = await metrics(port)
  t.equal(value(text, 'gateway_worker_restarts_total'), 1, 'the restart is counted')
  t.equal(value(text, 'gateway_workers_up'), 2)

  gw.proc.kill('SIGTERM')
  t.equal(await gw.exit, 0, 'the supervisor exits 0 once both drained')
  const stopped = gw.lines.filter(l => l['msg'] === 'worker stopped')
  t.same(stopped.map(l => l['code']), [0, 0], 'both workers stopped cleanly')
  t.equal(gw.lines.filter(l => l['msg'] === 'stopped' && l['drained'] === true).length, 2, 'both drained')
  t.comment(`${traffic.ok.size} answered 200, ${traffic.failed()} failed (connections of the killed worker)`)
  return traffic.ok
}

export function checkPublished (t: Test, ok: Set<string>, published: Array<{ headers: Record<string, string> }>): void {
  const ids = published.map(m => m.headers['x-request-id']!)
  const missing = [...ok].filter(id => !ids.includes(id))
  t.same(missing, [], `every one of the ${ok.size} records answered 200 is published`)
  t.equal(new Set(published.map(m => m.headers['message-id'])).size, published.length, 'no message-id published twice')
}

