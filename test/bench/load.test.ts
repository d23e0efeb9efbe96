import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import hdr from 'hdr-histogram-js'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import '../helpers/no-keepalive.js'
import { startTestGateway, CLIENT } from '../helpers/gateway.js'
import { tailBus } from '../helpers/child.js'
import { settled } from '../helpers/settle.js'

// `npm run bench load`, the load tool for load testers (bench/load/), run as
// they run it: a process of its own. No timing is asserted here; speed
// belongs in bench/.
const RUNNER = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url))

function loadTool (args: string[], env: Record<string, string> = {}): Promise<{ code: number | null, stdout: string, stderr: string }> {
  const { LOAD_CLIENT_SECRET: _inherited, ...inherited } = process.env
  const proc = spawn(process.execPath, [RUNNER, 'load', ...args], { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', d => { stdout += d })
  proc.stderr.on('data', d => { stderr += d })
  return new Promise(resolve => proc.once('close', code => resolve({ code, stdout, stderr })))
}

function outDir (t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-load-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

const creds = ['--client-id', CLIENT.client_id, '--client-secret', CLIENT.client_secret]

t.test('drives a real gateway at a fixed rate: every record and event is accepted and published', async t => {
  // Errors logged: a 500 here was seen once in a fresh clone's run (two of five
  // events) and not again in a dozen runs; if it comes back, its cause is in the output.
  const gw = await startTestGateway(t, { LOG_LEVEL: 'error' })
  const out = outDir(t)
  // 10/s for 1.5 s is 15 requests; a 2:1 mix makes 10 records and 5 events. A
  // generous --timeout: a busy machine may take seconds to start the hash workers.
  const run = await loadTool(['--url', gw.url, ...creds, '--rate', '10', '--duration', '1.5', '--mix', 'telemetry=2,evidence=1', '--media-bytes', '2048', '--timeout', '60', '--out', out])
  t.equal(run.code, 0, run.stdout + run.stderr)
  const files = readdirSync(out)
  const report = JSON.parse(readFileSync(join(out, files.find(f => f.endsWith('.json'))!), 'utf8'))
  t.ok(files.some(f => f.endsWith('.svg')), 'a chart beside the report')
  t.same(report.results.kinds.telemetry.statuses, { 200: 10 })
  t.same(report.results.kinds.evidence.statuses, { 202: 5 })
  t.notOk(JSON.stringify(report).includes(CLIENT.client_secret), 'the secret is not written down')
  t.match(run.stdout, /telemetry\s+10\s+10\s/)

  const records = await tailBus(gw.dataDir, 'asset.telemetry.v1')
  t.equal(records.length, 10, 'every record published')
  const ids = records.map(m => m.headers['x-request-id'])
  t.equal(new Set(ids).size, 10, 'each with an X-Request-Id of its own')
  t.ok(ids.every(id => id!.startsWith(`load-${report.runId}-`)), 'the ids of this run')
  const events = await settled(() => tailBus(gw.dataDir, 'stream.events.v1'), 5)
  t.equal(new Set(events.map(m => m.value.event_id)).size, 5, 'each with an event_id of its own')
  t.ok(events.every(m => m.value.media.length === 1 && m.value.media[0].size_bytes === 2048), 'with its media part stored')
})

t.test('drives batches and streams: every record of them acknowledged and published', async t => {
  const gw = await startTestGateway(t, { LOG_LEVEL: 'error' })
  const out = outDir(t)
  // 10/s for 1.2 s: 6 batches of 5 records and 6 records on 2 streams.
  const run = await loadTool(['--url', gw.url, ...creds, '--rate', '10', '--duration', '1.2', '--mix', 'batch=1,stream=1', '--batch-size', '5', '--connections', '2', '--timeout', '60', '--out', out])
  t.equal(run.code, 0, run.stdout + run.stderr)
  const report = JSON.parse(readFileSync(join(out, readdirSync(out).find(f => f.endsWith('.json'))!), 'utf8'))
  t.same(report.results.kinds.batch.statuses, { 200: 6 })
  t.same(report.results.kinds.stream.statuses, { acked: 6 })
  const ids = (await tailBus(gw.dataDir, 'asset.telemetry.v1')).map(m => m.headers['x-request-id']!)
  t.equal(ids.length, 36, 'every record published')
  t.equal(ids.filter(id => /-s[01]#\d+$/.test(id)).length, 6, 'six from the streams, named by stream and sequence number')
})

t.test('drives resumable uploads with forced disconnects: each cut, resumed from the server\'s offset, committed and published', async t => {
  const gw = await startTestGateway(t, { LOG_LEVEL: 'error', S3_PART_SIZE: String(5 * 1024 * 1024) })
  const out = outDir(t)
  // 4/s for 1 s: 4 uploads of 12 MiB, each first PATCH cut after 7 MiB (one whole part kept, the rest sent again).
  const run = await loadTool(['--url', gw.url, ...creds, '--rate', '4', '--duration', '1', '--mix', 'tus=1', '--media-bytes', String(12 * 1024 * 1024), '--tus-cut-after', String(7 * 1024 * 1024), '--timeout', '60', '--out', out])
  t.equal(run.code, 0, run.stdout + run.stderr)
  const report = JSON.parse(readFileSync(join(out, readdirSync(out).find(f => f.endsWith('.json'))!), 'utf8'))
  t.same(report.results.kinds.tus.statuses, { 202: 4 })
  const events = await settled(() => tailBus(gw.dataDir, 'stream.events.v1'), 4)
  t.equal(new Set(events.map(m => m.value.event_id)).size, 4, 'each with an event_id of its own')
  t.ok(events.every(m => m.value.media.length === 1 && m.value.media[0].size_bytes === 12 * 1024 * 1024), 'each with its whole clip')
  t.equal(new Set(events.map(m => m.value.media[0].sha256)).size, 1, 'the same clip each time, hashed alike across the cut')
})

t.test('refuses a target that is not loopback unless told the tester owns it', async t => {
  for (const args of [['--url', 'http://192.0.2.10:8080'], ['--url', 'http://127.0.0.1:9', '--auth-url', 'https://login.example.com']]) {
    const run = await loadTool([...args, ...creds])
    t.equal(run.code, 2, args.join(' '))
    t.match(run.stderr, /refusing to load .*: it is not loopback.*--i-own-this-target/)
    t.notMatch(run.stderr, /logging in/, 'before any request')
  }
})

t.test('--mix takes kind=weight pairs of known kinds', async t => {
  const bad: Array<[string, RegExp]> = [
    ['telemetry=abc', /"telemetry=abc" is not kind=weight/],
    ['video=10', /unknown kind "video" \(known: telemetry, batch, stream, evidence, tus\)/],
    ['telemetry=0,evidence=0', /at least one kind needs a weight above 0/],
    ['telemetry=5,telemetry=5', /"telemetry" is given twice/]
  ]
  for (const [mix, message] of bad) {
    const run = await loadTool(['--url', 'http://127.0.0.1:9', ...creds, '--mix', mix])
    t.equal(run.code, 2, mix)
    t.match(run.stderr, message)
  }
})

t.test('for load testers: ramping stages, a record of their own, the secret from the environment or a file, thresholds setting the exit code, an HdrHistogram log and a summary line', async t => {
  const gw = await startTestGateway(t, { LOG_LEVEL: 'error' })
  const out = outDir(t)
  const module = join(out, 'record.mjs')
  writeFileSync(module, "export default i => ({ asset_id: `mine-${i}`, timestamp: '2026-11-22T08:00:00Z', gps: { latitude: 1, longitude: 2 } })\n")
  // 0 → 10/s over 1 s, then 10/s → 0 over 1 s: 5 + 5 requests.
  const ramp = ['--url', gw.url, '--client-id', CLIENT.client_id, '--stages', '1s:10,1s:0', '--body-module', module, '--timeout', '60', '--out', out]
  const held = await loadTool([...ramp, '--threshold', 'errors<1%', '--threshold', 'p99<60s'], { LOAD_CLIENT_SECRET: CLIENT.client_secret })
  t.equal(held.code, 0, held.stdout + held.stderr)
  const summary = JSON.parse(held.stdout.trimEnd().split('\n').at(-1)!)
  t.equal(summary.verdict, 'pass')
  t.same(summary.requests, { due: 10, sent: 10, ok: 10, notSent: 0, interrupted: false })
  t.same(summary.thresholds.map((x: any) => [x.threshold, x.passed]), [['errors<1%', true], ['p99<60s', true]])
  t.match(held.stdout, /threshold held: errors<1%/)
  const assets = (await tailBus(gw.dataDir, 'asset.telemetry.v1')).map(m => m.value.asset_id).sort()
  t.same(assets, Array.from({ length: 10 }, (_, i) => `mine-${i}`).sort(), 'the module\'s records, one per request')

  const log = readFileSync(summary.files.hdrLog, 'utf8')
  const reader = new hdr.HistogramLogReader(log)
  let count = 0
  for (let h = reader.nextIntervalHistogram(); h !== null; h = reader.nextIntervalHistogram()) count += h.totalCount
  t.equal(count, 10, 'the HdrHistogram log holds every answer')
  t.notOk(readFileSync(summary.files.json, 'utf8').includes(CLIENT.client_secret), 'the secret is not written down')

  const secretFile = join(out, 'secret')
  writeFileSync(secretFile, `${CLIENT.client_secret}\n`)
  const crossed = await loadTool([...ramp.filter(a => a !== module && a !== '--body-module'), '--client-secret-file', secretFile, '--threshold', 'rate>=100000/s'], {})
  t.equal(crossed.code, 1, 'a threshold crossed fails the run although every request succeeded')
  const last = JSON.parse(crossed.stdout.trimEnd().split('\n').at(-1)!)
  t.same([last.verdict, last.requests.ok, last.thresholds[0].passed], ['fail', 10, false])
  t.match(crossed.stdout, /threshold CROSSED: rate>=100000\/s/)

  const usage = await loadTool(['--url', gw.url, '--client-id', CLIENT.client_id, '--threshold', 'p99<fast'], {})
  t.equal(usage.code, 2)
  t.match(usage.stderr, /--threshold: "p99<fast"/)
})
