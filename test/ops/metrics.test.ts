import t from 'tap'
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import '../helpers/no-keepalive.js'
import { startTestGateway, login, CLIENT } from '../helpers/gateway.js'
import { sharedInfra } from '../helpers/infra.js'
import { multipartBody, envelopePart, mediaPart, clip, baseEnvelope, postEvidence } from '../helpers/multipart.js'
import { eventually } from '../helpers/http.js'
import { promtool } from '../deploy/tools.js'

const example = readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8')

/**
 * The complaints of `promtool check metrics` about an exposition, but for
 * those about prom-client's own default gauges (`nodejs_active_*_total`),
 * which are not ours to rename.
 */
const PROM_CLIENT_OWN = /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/
function checkMetrics (text: string): Promise<string[]> {
  return new Promise(resolve => {
    const child = execFile(promtool(), ['check', 'metrics'], (err, stdout, stderr) => {
      const lines = `${stdout}${stderr}`.split('\n').filter(l => l !== '')
      resolve(lines.length === 0 && err ? [err.message] : lines.filter(l => !PROM_CLIENT_OWN.test(l)))
    })
    child.stdin!.end(text)
  })
}

/** The family names of an exposition (from its TYPE lines). */
const families = (text: string): string[] => [...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map(m => m[1]!)
/** The value of one sample line, found by its name and labels as written. */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find(l => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

async function login401 (url: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ grant_type: 'client_credentials', client_id: CLIENT.client_id, client_secret: 'wrong', audience: 'evidence-gateway' }) })
  await res.arrayBuffer()
  return res.status
}

t.test('one prefix, the families an operator alerts on, each series once per process, and promtool has nothing to say', async t => {
  const gw = await startTestGateway(t)
  const token = await login(gw.url)
  t.equal(await login401(gw.url), 401)
  const track = await fetch(`${gw.url}/v1/asset/track`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': 'm-1', 'x-request-timestamp': '1' }, body: example })
  t.equal(track.status, 200)
  const run = await fetch(`${gw.harnessUrl}/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'hi', mode: 'echo' }) })
  t.equal(((await run.json()) as any).status, 'succeeded')

  const text = await (await fetch(`${gw.url}/metrics`)).text()
  const ours = families(text).filter(n => !n.startsWith('process_') && !n.startsWith('nodejs_'))
  t.same(ours.filter(n => !n.startsWith('gateway_')), [], 'every family of ours begins gateway_ (process_ and nodejs_ are prom-client\'s standard ones)')
  for (const name of [
    'gateway_build_info', 'gateway_http_request_duration_seconds', 'gateway_http_requests_total',
    'gateway_telemetry_records_total', 'gateway_telemetry_records_pending', 'gateway_telemetry_records_pending_limit',
    'gateway_bus_publish_duration_seconds', 'gateway_bus_publish_errors_total', 'gateway_bus_published_messages_total',
    'gateway_auth_logins_total', 'gateway_runs_in_flight', 'gateway_runs_ended_total', 'gateway_runs_duration_seconds',
    'gateway_runs_sse_subscribers', 'gateway_runs_events_waiting', 'gateway_runs_events_dropped_total', 'gateway_evidence_outbox_backlog'
  ]) t.ok(ours.includes(name), name)
  t.match(text, /^gateway_build_info\{version="\d+\.\d+\.\d+",node="[\d.]+",uws="[^"]+"\} 1$/m)
  t.equal(sample(text, 'gateway_auth_logins_total{result="success"}'), 1)
  t.equal(sample(text, 'gateway_auth_logins_total{result="invalid_client"}'), 1)
  t.equal(sample(text, 'gateway_telemetry_records_pending'), 0)
  t.equal(sample(text, 'gateway_telemetry_records_pending_limit'), 20000)
  t.equal(sample(text, 'gateway_runs_ended_total{status="succeeded"}'), 1)
  t.equal(sample(text, 'gateway_runs_duration_seconds_count{status="succeeded"}'), 1)
  t.equal(sample(text, 'gateway_runs_in_flight{status="running"}'), 0)
  t.equal(sample(text, 'gateway_bus_published_messages_total{topic="asset.telemetry.v1"}'), 1)
  t.equal(sample(text, 'gateway_bus_publish_duration_seconds_count{topic="asset.telemetry.v1",result="ok"}'), 1)
  t.equal(sample(text, 'gateway_http_requests_total{server="harness",method="POST",route="/runs",status="200"}'), 1, 'the harness port\'s requests, labelled by server')
  t.equal(sample(text, 'gateway_http_requests_total{server="gateway",method="POST",route="/v1/asset/track",status="200"}'), 1)

  const harness = await fetch(`${gw.harnessUrl}/metrics`)
  await harness.arrayBuffer()
  t.equal(harness.status, 404, 'the harness port of the same process does not serve the same series again')
  const panel = await (await fetch(`${gw.harnessUrl}/console/metrics`)).text()
  t.same(families(panel), ['gateway_telemetry_records_total', 'gateway_evidence_uploads_total', 'gateway_evidence_media_bytes_total'], 'the console\'s counters alone')
  t.equal(sample(panel, 'gateway_telemetry_records_total'), 1)

  t.same(await checkMetrics(text), [], 'promtool check metrics: nothing about ours')

  const slow = await fetch(`${gw.harnessUrl}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ message: 'slow', mode: 'echo', options: { steps: 50, delay_ms: 100 } }) })
  const { run_id: runId } = await slow.json() as { run_id: string }
  const running = await eventually(async () => (await fetch(`${gw.url}/metrics`)).text(), text => sample(text, 'gateway_runs_in_flight{status="running"}') === 1)
  t.equal(sample(running, 'gateway_runs_in_flight{status="running"}'), 1, 'a run in flight, by its status')
  await (await fetch(`${gw.harnessUrl}/runs/${runId}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).arrayBuffer()
  const cancelled = await eventually(async () => (await fetch(`${gw.url}/metrics`)).text(), text => sample(text, 'gateway_runs_ended_total{status="cancelled"}') === 1)
  t.equal(sample(cancelled, 'gateway_runs_in_flight{status="running"}'), 0, 'and no longer once it ended')
})

t.test('a harness-only process serves /metrics on its harness port', async t => {
  const gw = await startTestGateway(t, { ROLES: 'harness' })
  const text = await (await fetch(`${gw.harnessUrl}/metrics`)).text()
  t.ok(families(text).includes('gateway_runs_in_flight'))
  t.same(await checkMetrics(text), [])
})

t.test('S3 requests are timed by operation, their errors counted by name', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const gw = await startTestGateway(t, { STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: `metrics-${randomUUID()}` })
  const token = await login(gw.url)
  const media = clip(64_000)
  const res = await postEvidence(gw.url, token, multipartBody([envelopePart(baseEnvelope({ event_id: 'evt-metrics', media: [{ checksum_sha256: media.sha256 }] })), mediaPart(media.data)]))
  t.equal(res.status, 202)
  const text = await eventually(async () => (await fetch(`${gw.url}/metrics`)).text(), text => (sample(text, 'gateway_s3_request_duration_seconds_count{operation="PutObject",result="ok"}') ?? 0) >= 1)
  t.ok((sample(text, 'gateway_s3_request_duration_seconds_count{operation="PutObject",result="ok"}') ?? 0) >= 1, 'the media object')
  // Every family the alerts and the dashboard read is one a gateway serves (this one has every role and S3).
  const served = new Set(families(text))
  for (const file of ['deploy/helm/evidence-gateway/files/alerts.yaml', 'deploy/grafana/evidence-gateway.json']) {
    const read = new Set([...readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8').matchAll(/\b(gateway_[a-z0-9_]+?|process_[a-z0-9_]+?)(_bucket|_count|_sum)?\b/g)].map(m => m[1]!))
    for (const name of read) t.ok(served.has(name) || name === 'gateway_worker_restarts_total', `${file}: ${name} is served`)
  }
  t.same(await checkMetrics(text), [])
})
