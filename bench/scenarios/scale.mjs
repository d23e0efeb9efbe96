// All cores of one machine: the gateway with WORKERS=1 and WORKERS=2 side by
// side in one run, for telemetry (POST /v1/asset/track, the spec's example
// record, local bus) and for runs (POST /runs:start, echo, 202).
//
//   telemetry-w1 / -w2   the whole gateway, BUS=local, WORKERS=1 / 2
//   runs-w1 / -w2        the same on HARNESS_PORT
//
// The servers are not pinned (WORKERS=2 needs both cores); wrk stays on the
// load CPU. On a 2-core machine the second worker therefore shares a core
// with the load generator: the WORKERS=2 rows measure what a second process
// buys when nothing else is free, not a clean 2×. `speedup` (the vs-baseline
// column) is each row's req/s over the WORKERS=1 row of its kind.
import { cpus } from 'node:os'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gateway } from '../lib/targets.mjs'
import { runDeclarative } from '../lib/context.mjs'
import { CLIENT, login } from '../lib/login.mjs'
import { REPO_DIR } from '../lib/paths.mjs'

const BODY = readFileSync(join(REPO_DIR, 'test/fixtures/asset-track.json'))

function target (kind, workers) {
  const label = `${kind}-w${workers}`
  const harness = kind === 'runs'
  const t = gateway({
    label,
    pin: false,
    listenOn: harness ? 'harnessPort' : 'port',
    readyLine: workers > 1 ? 'workers listening' : 'gateway listening',
    env: ctx => {
      const clientsFile = join(ctx.tmpDir, 'clients.json')
      writeFileSync(clientsFile, JSON.stringify([CLIENT]))
      return { WORKERS: String(workers), BUS: 'local', STORAGE: 'fs', AUTH_CLIENTS_FILE: clientsFile }
    }
  })
  return {
    ...t,
    workers,
    kind,
    request: harness
      ? { method: 'POST', path: '/runs:start', body: { message: 'hello', mode: 'echo' }, expectStatus: s => s === 202 }
      : async server => ({
        method: 'POST',
        path: '/v1/asset/track',
        headers: { Authorization: `Bearer ${await login(server.url)}`, 'Content-Type': 'application/json', 'X-Request-Id': 'bench-scale', 'X-Request-Timestamp': '1763799330' },
        body: BODY,
        expectStatus: s => s === 200
      })
  }
}

export default {
  name: 'scale',
  description: 'WORKERS=1 beside WORKERS=2 on this machine: telemetry (local bus) and runs (echo), req/s and latency',
  targets: ['telemetry', 'runs'].flatMap(kind => [target(kind, 1), target(kind, 2)]),
  baseline: 'telemetry-w1',

  async run (ctx) {
    const { rows } = await runDeclarative(this, ctx)
    for (const r of rows) {
      const one = rows.find(o => o.label === r.label.replace(/-w\d+$/, '-w1'))
      if (r.reqPerSec && one?.reqPerSec) r.speedup = r.reqPerSec / one.reqPerSec
    }
    return {
      rows,
      compareBy: 'speedup',
      notes: [`${cpus().length} CPUs here; the servers run unpinned and wrk shares a CPU with them, so WORKERS=2 competes with the load generator (bench/README.md, Scenarios)`, 'server CPU and RSS of the -w2 rows are the supervisor\'s alone (its workers are its children): read req/s and latency']
    }
  }
}
