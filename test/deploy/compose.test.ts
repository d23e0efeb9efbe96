import t from 'tap'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'yaml'
import { defaultOf, knownVariables, readRepo, root, run, secretVariables } from './tools.js'

// No container engine runs where this project is built: the files are checked for shape, not run; the
// topics step's script runs against a stand-in for rpk.
const compose = parse(readRepo('deploy/compose.yaml'), { merge: true })
const services = compose.services as Record<string, any>
const replicas = ['gateway-1', 'gateway-2', 'gateway-3']
const inits = ['topics', 'minio-init']
const longRunning = Object.keys(services).filter(s => !inits.includes(s))
const gatewayEnv = services['gateway-1'].environment

t.test('three gateway replicas, each with its own volume, behind a load balancer, with Redpanda, MinIO and Prometheus', async t => {
  t.same(Object.keys(services).sort(), ['gateway-1', 'gateway-2', 'gateway-3', 'lb', 'minio', 'minio-init', 'prometheus', 'redpanda', 'topics'])
  const volumes = replicas.map(r => services[r].volumes[0].split(':')[0])
  t.equal(new Set(volumes).size, 3, 'no two replicas share a DATA_DIR')
  for (const v of volumes) t.ok(v in compose.volumes, `${v} is declared`)
  for (const r of replicas) {
    t.notOk(services[r].ports, `${r} publishes no port: only the load balancer is reachable`)
    t.same(services[r].depends_on, { topics: { condition: 'service_completed_successfully' }, 'minio-init': { condition: 'service_completed_successfully' } }, 'the gateways start once the topics, the bucket and their user exist')
  }
  t.same(services['lb'].ports, ['8080:8080', '8081:8081', '127.0.0.1:8404:8404'])
  t.same(services['prometheus'].ports, ['127.0.0.1:9090:9090'])
})

t.test('every image is pinned to an exact release', async t => {
  for (const [name, s] of Object.entries(services)) {
    if (s.build) {
      t.equal(s.image, `evidence-gateway:${JSON.parse(readRepo('package.json')).version}`, `${name}: built here, tagged with the version`)
      continue
    }
    t.match(s.image, /:(v?\d+\.\d+\.\d+|RELEASE\.\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ)$/, `${name}: ${s.image}`)
  }
})

t.test('every replica runs in cluster mode with the same settings, and only known variables', async t => {
  for (const r of replicas) {
    const { CLUSTER_ADVERTISED_HOST: host, ...env } = services[r].environment
    const { CLUSTER_ADVERTISED_HOST: _, ...first } = gatewayEnv
    t.same(env, first, `${r}: the same environment`)
    t.equal(host, r, `${r} is reached by the others at its own name`)
    t.match(env, { BUS: 'kafka', STORAGE: 's3', KAFKA_BROKERS: 'redpanda:9092', S3_ENDPOINT: 'http://minio:9000', HARNESS_PEER_PORT: String(defaultOf('HARNESS_PEER_PORT')) })
    t.same(Object.keys(services[r].environment).filter(k => !knownVariables.has(k)), [], 'no unknown variable')
  }
})

t.test('harness auth is on, against the service\'s own issuer and key set', async t => {
  t.match(gatewayEnv, {
    SVC_HARNESS_AUTH_ENABLED: 'true',
    IDP_ISSUER: gatewayEnv.AUTH_ISSUER,
    IDP_JWKS_URL: `http://127.0.0.1:${defaultOf('PORT')}/.well-known/jwks.json`
  })
  t.ok((defaultOf('AUTH_AUDIENCE') as string[]).includes(gatewayEnv.IDP_RS256_AUDIENCE), 'an audience clients log in for')
})

t.test('secrets come from the environment and compose refuses to start without them', async t => {
  for (const name of secretVariables.filter(n => n in gatewayEnv)) t.match(gatewayEnv[name], /^\$\{[A-Z0-9_]+:\?/, `${name} is required from the environment`)
  t.match(gatewayEnv.HARNESS_TENANT_ASSERTION_SECRET, /^\$\{HARNESS_TENANT_ASSERTION_SECRET:\?/)
  t.match(gatewayEnv.AWS_SECRET_ACCESS_KEY, /^\$\{GATEWAY_S3_SECRET:\?/)
  t.match(services['minio'].environment.MINIO_ROOT_PASSWORD, /^\$\{MINIO_ROOT_PASSWORD:\?/)
})

t.test('the gateways use a MinIO user of their own, limited to their bucket; the root user stays with the operator', async t => {
  const root = services['minio'].environment.MINIO_ROOT_USER
  t.not(gatewayEnv.AWS_ACCESS_KEY_ID, root)
  t.not(gatewayEnv.AWS_SECRET_ACCESS_KEY, services['minio'].environment.MINIO_ROOT_PASSWORD)
  const script: string = services['minio-init'].command[0]
  const bucket = gatewayEnv.S3_BUCKET
  t.match(script, new RegExp(`mc mb --ignore-existing local/${bucket}\\n`), 'the init step creates the bucket')
  t.match(script, /mc admin policy create local gateway \/policy\/gateway-policy\.json/)
  t.match(script, new RegExp(`mc admin user add local ${gatewayEnv.AWS_ACCESS_KEY_ID} "\\$\\$GATEWAY_S3_SECRET"`))
  t.match(script, new RegExp(`mc admin policy attach local gateway --user ${gatewayEnv.AWS_ACCESS_KEY_ID}\\s*$`))
  t.same(services['minio-init'].volumes, ['./minio/gateway-policy.json:/policy/gateway-policy.json:ro'])
  const policy = JSON.parse(readRepo('deploy/minio/gateway-policy.json'))
  const resources = policy.Statement.flatMap((s: any) => s.Resource).sort()
  t.same(resources, [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`], 'the bucket and its objects, nothing else')
  const actions: string[] = policy.Statement.flatMap((s: any) => s.Action)
  t.ok(policy.Statement.every((s: any) => s.Effect === 'Allow'))
  t.same(actions.filter(a => a.includes('*') || /Bucket$|Policy|Acl|Lifecycle/.test(a) && a !== 's3:ListBucket'), [], 'no wildcard, no bucket administration')
})

t.test('the topics step creates every topic with its partitions and retention, and keeps an existing topic\'s partitions', async t => {
  const step = services['topics']
  t.same(step.depends_on, { redpanda: { condition: 'service_healthy' } })
  t.equal(step.image, services['redpanda'].image, 'rpk of the broker\'s own release')
  t.equal(step.environment.HARNESS_RETENTION_S, gatewayEnv.HARNESS_RETENTION_S, 'the gateways\' retention')
  t.equal(step.environment.PARTITIONS, gatewayEnv.KAFKA_TOPIC_PARTITIONS)

  const dir = mkdtempSync(join(tmpdir(), 'topics-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const calls = join(dir, 'calls')
  const rpk = join(dir, 'rpk')
  // Records each call; `describe` answers as if the topics existed when EXISTING is set.
  writeFileSync(rpk, `#!/bin/sh\necho "$*" >> "${calls}"\n[ "$1 $2" = "topic describe" ] && [ -z "$EXISTING" ] && exit 1\nexit 0\n`)
  chmodSync(rpk, 0o755)
  const topics = async (existing: string): Promise<string[]> => {
    writeFileSync(calls, '')
    await run('sh', [join(root, 'deploy/topics.sh')], { env: { ...process.env, ...step.environment, PATH: `${dir}:${process.env['PATH']}`, EXISTING: existing } })
    return readFileSync(calls, 'utf8').trim().split('\n')
  }
  const created = (await topics('')).filter(c => c.startsWith('topic create'))
  const retention = (name: string, calls: string[]): number => Number(/retention\.ms=(\d+)/.exec(calls.find(c => c.includes(` ${name} `))!)![1])
  const names = ['TOPIC_TELEMETRY', 'TOPIC_EVIDENCE', 'TOPIC_RUNS', 'TOPIC_RUNS_CONTROL'].map(v => String(defaultOf(v)))
  t.same(created.map(c => c.split(' ')[2]), names, 'the four topics the gateway uses')
  for (const c of created) t.match(c, ` -p ${gatewayEnv.KAFKA_TOPIC_PARTITIONS} -r 1 -c cleanup.policy=delete `, 'the same partitions for all: the runs and control topics must match')
  t.ok(retention(names[2]!, created) >= Number(gatewayEnv.HARNESS_RETENTION_S) * 1000, 'the runs topic keeps runs at least as long as the gateways')

  const existing = await topics('yes')
  const altered = existing.filter(c => c.startsWith('topic alter-config'))
  t.same(existing.filter(c => c.startsWith('topic create')), [], 'nothing created twice')
  t.same(altered.map(c => c.split(' ')[2]), names, 'retention set again; partitions untouched')
  t.equal(retention(names[2]!, altered), retention(names[2]!, created))
})

t.test('restart policies and resource limits on every long-running service; init steps run once', async t => {
  for (const name of longRunning) {
    t.equal(services[name].restart, 'unless-stopped', `${name} restarts`)
    t.ok(services[name].deploy?.resources?.limits?.memory && services[name].deploy.resources.limits.cpus, `${name} has a memory and CPU limit`)
  }
  for (const name of inits) t.equal(services[name].restart, 'no', `${name} runs once`)
  for (const r of replicas) {
    t.match(services[r], { read_only: true, cap_drop: ['ALL'], security_opt: ['no-new-privileges:true'], tmpfs: ['/tmp'] }, `${r}: read-only, no capability`)
    const drain = (Number(defaultOf('SHUTDOWN_TIMEOUT_MS')) + Number(defaultOf('HTTP_DRAIN_TIMEOUT_MS'))) / 1000 + 5
    t.ok(Number(String(services[r].stop_grace_period).replace(/s$/, '')) >= drain, `${r}: stop_grace_period covers the drain (${drain} s)`)
  }
})

t.test('container health is liveness; the load balancer routes on readiness', async t => {
  for (const r of replicas) t.notOk(services[r].healthcheck, `${r} keeps the image's HEALTHCHECK`)
  t.match(readRepo('Dockerfile'), /HEALTHCHECK [^\n]*\\\n[^\n]*\/health'/, 'the image checks /health')
  const cfg = readRepo('deploy/haproxy.cfg')
  t.equal((cfg.match(/option httpchk GET \/health\/ready\n/g) ?? []).length, 2, 'the gateway and harness pools: readiness without the bus')
  t.match(cfg, /use_backend telemetry if \{ path_beg \/v1\/asset\/track \}/, 'telemetry has a pool of its own')
  t.match(cfg, /backend telemetry\n(?:.*\n)*?\s+option httpchk GET \/health\/ready\/bus\n/, 'which needs the bus too')
})

t.test('HAProxy sends both ports to every replica over kept-alive connections, and shows its stats', async t => {
  const cfg = readRepo('deploy/haproxy.cfg')
  t.match(cfg, /^\s*option forwardfor/m, 'X-Forwarded-For, which AUTH_CLIENT_ADDRESS_HEADER names')
  t.equal(gatewayEnv.AUTH_CLIENT_ADDRESS_HEADER, 'x-forwarded-for')
  for (const port of [8080, 8081]) {
    t.match(cfg, new RegExp(`bind :${port}\\b`))
    for (const r of replicas) t.match(cfg, new RegExp(`server ${r} ${r}:${port} check`), `${r}:${port}`)
  }
  t.notMatch(cfg, /http-server-close|httpclose|http-tunnel/, 'no connection closed after each request')
  t.match(cfg, /^\s*option http-keep-alive$/m)
  t.match(cfg, /frontend stats\n\s+bind :8404\n\s+stats enable/)
  t.match(cfg, /frontend metrics\n\s+bind :8405\n\s+http-request use-service prometheus-exporter/)
})

t.test('Prometheus scrapes every replica\'s /metrics and HAProxy\'s, with the chart\'s alert rules', async t => {
  const prometheus = parse(readRepo('deploy/prometheus.yml'))
  const gateways = prometheus.scrape_configs.find((c: any) => c.job_name === 'evidence-gateway')
  t.equal(gateways.metrics_path, '/metrics')
  t.same(gateways.static_configs[0].targets, replicas.map(r => `${r}:${defaultOf('PORT')}`))
  t.match(gatewayEnv.METRICS_TOKEN, /^\$\{METRICS_TOKEN:\?/, '/metrics needs a token: Prometheus is on another host')
  t.same(gateways.authorization, { credentials_file: '/etc/prometheus/metrics-token' })
  t.same(services['prometheus'].configs, [{ source: 'metrics-token', target: '/etc/prometheus/metrics-token' }])
  t.same(compose.configs['metrics-token'], { environment: 'METRICS_TOKEN' }, 'the token file is the gateways\' variable')
  t.same(prometheus.scrape_configs.find((c: any) => c.job_name === 'haproxy').static_configs[0].targets, ['lb:8405'])
  t.same(prometheus.rule_files, ['/etc/prometheus/alerts.yaml'])
  t.ok(services['prometheus'].volumes.includes('./helm/evidence-gateway/files/alerts.yaml:/etc/prometheus/alerts.yaml:ro'), 'the one rule file the chart also ships')
})
