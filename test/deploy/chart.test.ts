import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'yaml'
import { chart, defaultOf, deployTools, knownVariables, output, parseManifests, readRepo, run, secretVariables, type Manifest } from './tools.js'

// No cluster runs where this project is built: the chart is linted, rendered for each profile and every
// rendered manifest validated offline against the Kubernetes schemas (and prometheus-operator's, for
// ServiceMonitor and PrometheusRule) by kubeconform, in strict mode (no unknown field passes).
const tools = deployTools()
const kubeVersions = tools.KUBE_VERSIONS.split(' ')
const schemaLocations = tools.KUBE_SCHEMA_LOCATIONS.split(' ').flatMap(l => ['-schema-location', l])
const values = parse(readRepo('deploy/helm/evidence-gateway/values.yaml'))
const alerts = parse(readRepo('deploy/helm/evidence-gateway/files/alerts.yaml'))

const dir = mkdtempSync(join(tmpdir(), 'chart-test-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

/** Values beyond the cluster example that switch on every optional part of the chart. */
const everything = join(dir, 'everything.yaml')
writeFileSync(everything, JSON.stringify({
  workers: 2,
  resources: { requests: { cpu: '2', memory: '448Mi' }, limits: { cpu: '4', memory: '832Mi' } },
  autoscaling: { enabled: false },
  image: { digest: 'sha256:' + 'ab'.repeat(32) },
  kafka: { tls: true, saslMechanism: 'scram-sha-512' },
  s3: { credentialsFromSecret: false },
  serviceAccount: { annotations: { 'eks.amazonaws.com/role-arn': 'arn:aws:iam::123456789012:role/gateway' } },
  clientsFile: { secretName: 'gateway-clients' },
  orgsFile: { configMapName: 'gateway-orgs' },
  env: { TELEMETRY_LINGER_MS: '25', EVIDENCE_PLAYBACK_BASE_URL: 'https://play.example.com/' },
  networkPolicy: {
    httpFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } } }],
    harnessFrom: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress' } } }],
    egress: { enabled: true, rules: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8' } }], ports: [{ protocol: 'TCP', port: 9092 }] }] }
  },
  metrics: { prometheusRule: { extraGroups: [{ name: 'more', rules: [{ alert: 'More', expr: 'vector(1) > 2' }] }] } }
}))

const profiles: Record<string, string[]> = {
  single: [],
  cluster: ['-f', join(chart, 'values-cluster.yaml')],
  everything: ['-f', join(chart, 'values-cluster.yaml'), '-f', everything]
}

async function render (args: string[]): Promise<string> {
  const { stdout } = await run(tools.HELM, ['template', 'gw', chart, '--namespace', 'apps', ...args], { maxBuffer: 16 * 1024 * 1024 })
  return stdout
}

async function renderFailure (args: string[]): Promise<string> {
  try {
    await render(args)
  } catch (err) {
    return output(err)
  }
  throw new Error(`helm template ${args.join(' ')} rendered`)
}

const rendered: Record<string, Manifest[]> = {}
t.before(async () => {
  for (const [name, args] of Object.entries(profiles)) rendered[name] = parseManifests(await render(args))
})

const find = (profile: string, kind: string): Manifest[] => rendered[profile]!.filter(m => m.kind === kind)
const one = (profile: string, kind: string): Manifest => {
  const found = find(profile, kind)
  if (found.length !== 1) throw new Error(`${profile}: ${found.length} ${kind}`)
  return found[0]!
}
const workload = (profile: string): Manifest => rendered[profile]!.find(m => m.kind === 'Deployment' || m.kind === 'StatefulSet')!
const container = (profile: string): any => workload(profile).spec.template.spec.containers[0]
const env = (profile: string): Map<string, any> => new Map(container(profile).env.map((e: any) => [e.name, e]))
const value = (profile: string, name: string): string | undefined => env(profile).get(name)?.value

t.test('helm lint passes for each profile', async t => {
  for (const [name, args] of Object.entries(profiles)) {
    try {
      await run(tools.HELM, ['lint', '--strict', chart, ...args])
      t.pass(name)
    } catch (err) {
      t.fail(`${name}: ${output(err)}`)
    }
  }
})

t.test('every rendered manifest is valid for the oldest and the newest Kubernetes the chart supports', async t => {
  t.match(parse(readRepo('deploy/helm/evidence-gateway/Chart.yaml')).kubeVersion, `>=${kubeVersions[0]}`, 'the floor checked is the chart\'s kubeVersion')
  for (const [name, args] of Object.entries(profiles)) {
    const file = join(dir, `${name}.yaml`)
    writeFileSync(file, await render(args))
    for (const version of kubeVersions) {
      try {
        const { stdout } = await run(tools.KUBECONFORM, ['-strict', '-summary', '-output', 'json', '-kubernetes-version', version, ...schemaLocations, file])
        const { summary } = JSON.parse(stdout)
        t.same(summary, { valid: rendered[name]!.length, invalid: 0, errors: 0, skipped: 0 }, `${name} on Kubernetes ${version}: all ${rendered[name]!.length} valid, none skipped`)
      } catch (err) {
        t.fail(`${name} on Kubernetes ${version}: ${output(err)}`)
      }
    }
  }
})

t.test('kubeconform rejects what the API server would: the check is not a formality', async t => {
  const bad = (await render(profiles['cluster']!)).replace('readOnlyRootFilesystem: true', 'readOnlyRootFilesystem: true\n            readOnlyRootFileSystem: true')
  const file = join(dir, 'bad.yaml')
  writeFileSync(file, bad)
  const failure = await run(tools.KUBECONFORM, ['-strict', '-kubernetes-version', kubeVersions[0]!, ...schemaLocations, file]).then(() => '', output)
  t.match(failure, /readOnlyRootFileSystem/, 'a misspelt field fails')
})

t.test('the default profile: one pod, its DATA_DIR on a volume that outlives it', async t => {
  t.same(rendered['single']!.map(m => m.kind).sort(), ['NetworkPolicy', 'Service', 'Service', 'ServiceAccount', 'StatefulSet'])
  const sts = one('single', 'StatefulSet')
  t.equal(sts.spec.replicas, 1)
  t.equal(sts.spec.volumeClaimTemplates[0].metadata.name, 'data')
  t.equal(sts.spec.volumeClaimTemplates[0].spec.resources.requests.storage, values.persistence.size)
  t.same(sts.spec.template.spec.volumes.map((v: any) => v.name), ['tmp'], 'data comes from the claim, not an emptyDir')
  t.equal(sts.spec.serviceName, 'gw-evidence-gateway-headless')
  t.match(Object.fromEntries(env('single')), { BUS: { value: 'local' }, STORAGE: { value: 'fs' }, DATA_DIR: { value: '/data' } })
  t.notOk(env('single').has('HARNESS_PEER_PORT'), 'no peers')
})

t.test('the cluster profile: interchangeable pods on Kafka and S3, autoscaled on CPU, drained one at a time', async t => {
  const deployment = one('cluster', 'Deployment')
  t.notOk(deployment.spec.replicas, 'the autoscaler owns the replica count')
  t.same(deployment.spec.strategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } })
  t.same(deployment.spec.template.spec.volumes.find((v: any) => v.name === 'data'), { name: 'data', emptyDir: { sizeLimit: values.cache.sizeLimit } })
  const hpa = one('cluster', 'HorizontalPodAutoscaler')
  t.same(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name })
  t.same(hpa.spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }])
  t.equal(hpa.spec.minReplicas, 3)
  const pdb = one('cluster', 'PodDisruptionBudget')
  t.equal(pdb.spec.maxUnavailable, 1)
  t.same(pdb.spec.selector.matchLabels, deployment.spec.selector.matchLabels)
  t.match(Object.fromEntries(env('cluster')), {
    BUS: { value: 'kafka' },
    STORAGE: { value: 's3' },
    KAFKA_BROKERS: { value: 'kafka-0.kafka.kafka.svc:9092,kafka-1.kafka.kafka.svc:9092,kafka-2.kafka.kafka.svc:9092' },
    S3_ENDPOINT: { value: 'http://minio.minio.svc:9000' },
    S3_FORCE_PATH_STYLE: { value: 'true' },
    HARNESS_PEER_PORT: { value: String(defaultOf('HARNESS_PEER_PORT')) },
    CLUSTER_ADVERTISED_HOST: { valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }
  })
  t.equal(one('everything', 'Deployment').spec.replicas, 3, 'without the autoscaler, replicaCount')
  t.equal(find('everything', 'HorizontalPodAutoscaler').length, 0)
})

t.test('probes: liveness on /health, readiness on /health/ready, start-up before either', async t => {
  for (const profile of Object.keys(profiles)) {
    const c = container(profile)
    t.match(c.livenessProbe, { httpGet: { path: '/health', port: 'http' } }, `${profile} liveness`)
    t.match(c.readinessProbe, { httpGet: { path: '/health/ready', port: 'http' } }, `${profile} readiness`)
    t.match(c.startupProbe, { httpGet: { path: '/health', port: 'http' } }, `${profile} start-up`)
    t.same(c.ports.find((p: any) => p.name === 'http'), { name: 'http', containerPort: defaultOf('PORT') })
    t.same(c.ports.find((p: any) => p.name === 'harness'), { name: 'harness', containerPort: defaultOf('HARNESS_PORT') })
  }
})

t.test('the pod runs as a non-root user on a read-only root filesystem, with no token and no capability', async t => {
  for (const profile of Object.keys(profiles)) {
    const pod = workload(profile).spec.template.spec
    t.match(pod.securityContext, { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } }, profile)
    t.equal(pod.automountServiceAccountToken, false)
    t.same(container(profile).securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } })
    t.same(container(profile).volumeMounts.filter((m: any) => !m.readOnly).map((m: any) => m.mountPath).sort(), ['/data', '/tmp'], 'the only writable paths')
  }
})

t.test('SIGTERM drains within the grace period, after the pod has left the endpoints', async t => {
  const drainS = (Number(defaultOf('SHUTDOWN_TIMEOUT_MS')) + Number(defaultOf('HTTP_DRAIN_TIMEOUT_MS'))) / 1000
  for (const profile of Object.keys(profiles)) {
    const pod = workload(profile).spec.template.spec
    const sleep = Number(container(profile).lifecycle.preStop.exec.command[1])
    t.ok(sleep > 0, 'a pause before SIGTERM')
    t.ok(pod.terminationGracePeriodSeconds >= sleep + drainS + 5, `${profile}: ${pod.terminationGracePeriodSeconds} s ≥ ${sleep} + ${drainS} + 5`)
  }
})

t.test('resources: requests and limits on every pod, requests within limits', async t => {
  const mi = (q: string): number => Number(q.replace(/Mi$/, '')) * (q.endsWith('Gi') ? 1024 : 1)
  for (const profile of Object.keys(profiles)) {
    const { requests, limits } = container(profile).resources
    t.ok(requests.cpu && requests.memory && limits.cpu && limits.memory, profile)
    t.ok(mi(requests.memory) <= mi(limits.memory) && Number(requests.cpu) <= Number(limits.cpu))
    t.ok(mi(requests.memory) >= 150 * Number(value(profile, 'WORKERS')), 'at least 150 MiB a worker (docs/evidence.md, Memory)')
  }
})

t.test('harness auth is on, against the gateway\'s own issuer and key set', async t => {
  for (const profile of Object.keys(profiles)) {
    t.equal(value(profile, 'SVC_HARNESS_AUTH_ENABLED'), 'true', profile)
    t.equal(value(profile, 'IDP_ISSUER'), value(profile, 'AUTH_ISSUER'), 'tokens from /api/v1/login pass the harness')
    t.equal(value(profile, 'IDP_JWKS_URL'), `http://127.0.0.1:${defaultOf('PORT')}/.well-known/jwks.json`)
    t.ok((defaultOf('AUTH_AUDIENCE') as string[]).includes(value(profile, 'IDP_RS256_AUDIENCE')!), 'an audience clients can log in for')
    t.same(env(profile).get('HARNESS_TENANT_ASSERTION_SECRET').valueFrom, { secretKeyRef: { name: values.existingSecret, key: 'HARNESS_TENANT_ASSERTION_SECRET' } })
  }
  t.equal(value('single', 'IDP_ISSUER'), values.publicUrl)
})

t.test('secrets come from the Secret, by reference; the chart renders none and sets only known variables', async t => {
  for (const profile of Object.keys(profiles)) {
    t.equal(find(profile, 'Secret').length, 0, `${profile}: no Secret rendered`)
    for (const [name, e] of env(profile)) {
      t.ok(knownVariables.has(name), `${profile}: ${name} is a variable of the gateway or the AWS SDK`)
      if (secretVariables.includes(name) || name.startsWith('AWS_') || name === 'KAFKA_USERNAME') t.ok(e.valueFrom?.secretKeyRef && !('value' in e), `${profile}: ${name} by reference`)
    }
  }
  t.same(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'].map(n => env('cluster').get(n)?.valueFrom.secretKeyRef.key), ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'])
  t.notOk(env('everything').has('AWS_SECRET_ACCESS_KEY'), 's3.credentialsFromSecret: false leaves the SDK its own chain')
  t.same(['KAFKA_USERNAME', 'KAFKA_PASSWORD'].map(n => env('everything').get(n)?.valueFrom.secretKeyRef.key), ['KAFKA_USERNAME', 'KAFKA_PASSWORD'])
  t.equal(value('everything', 'TELEMETRY_LINGER_MS'), '25', 'env adds variables')
  t.equal(value('everything', 'AUTH_CLIENTS_FILE'), '/etc/evidence-gateway/clients/clients.json')
  t.equal(container('everything').image, `evidence-gateway:0.1.0@sha256:${'ab'.repeat(32)}`, 'pulled by digest')
})

t.test('the NetworkPolicy: peer ports only from the gateway\'s own pods, egress only where allowed', async t => {
  const labels = one('cluster', 'Deployment').spec.selector.matchLabels
  const policy = one('cluster', 'NetworkPolicy')
  t.same(policy.spec.podSelector.matchLabels, labels)
  const peer = policy.spec.ingress.find((r: any) => r.ports[0].port === values.ports.peer)
  t.same(peer.from, [{ podSelector: { matchLabels: labels } }])
  t.same(peer.ports, [{ protocol: 'TCP', port: values.ports.peer }], 'one worker: its port')
  const wide = one('everything', 'NetworkPolicy')
  t.same(wide.spec.ingress.find((r: any) => r.ports[0].port === values.ports.peer).ports, [{ protocol: 'TCP', port: values.ports.peer, endPort: values.ports.peer + 1 }], 'worker i of 2 listens on peer + i - 1')
  t.ok(wide.spec.ingress.filter((r: any) => r.ports[0].port !== values.ports.peer).every((r: any) => r.from.length === 1), 'http and harness from the listed peers only')
  t.same(wide.spec.policyTypes, ['Ingress', 'Egress'])
  t.same(wide.spec.egress.map((r: any) => r.ports.map((p: any) => p.port)), [[53, 53], [values.ports.peer], [9092]])
  t.same(one('single', 'NetworkPolicy').spec.ingress.length, 2, 'no peer rule without peers')
})

t.test('the ServiceMonitor scrapes /metrics on each pod; the PrometheusRule carries files/alerts.yaml', async t => {
  const service = find('cluster', 'Service')[0]!
  const monitor = one('cluster', 'ServiceMonitor')
  t.same(monitor.spec.selector.matchLabels, one('cluster', 'Deployment').spec.selector.matchLabels)
  t.equal(service.metadata.labels?.[monitor.spec.jobLabel], 'evidence-gateway', 'job="evidence-gateway", as the rules select')
  t.same(monitor.spec.endpoints, [{ port: 'http', path: '/metrics', interval: '30s', authorization: { type: 'Bearer', credentials: { name: values.existingSecret, key: 'METRICS_TOKEN' } } }])
  t.same(env('cluster').get('METRICS_TOKEN').valueFrom, { secretKeyRef: { name: values.existingSecret, key: 'METRICS_TOKEN', optional: true } }, 'the token the ServiceMonitor sends is the one the pods require')
  t.same(one('cluster', 'PrometheusRule').spec.groups, alerts.groups)
  t.same(one('everything', 'PrometheusRule').spec.groups.map((g: any) => g.name), ['evidence-gateway', 'more'])
  t.equal(find('single', 'ServiceMonitor').length + find('single', 'PrometheusRule').length, 0, 'off by default')
})

t.test('values the gateway would refuse are refused at install', async t => {
  t.match(await renderFailure(['--set', 'workers=auto']), /workers must be an integer/)
  t.match(await renderFailure(['--set', 'workers=0']), /workers must be an integer/)
  t.match(await renderFailure(['--set', 'workers=1.5']), /workers must be an integer/)
  t.match(await render(['--set', 'workers=2']), /- name: WORKERS\n\s+value: "2"\n/, 'an integer from --set is taken')
  t.match(await renderFailure(['--set', 'profile=cluster']), /kafka.brokers/)
  t.match(await renderFailure(['--set', 'profile=multi']), /profile must be single or cluster/)
  t.match(await renderFailure(['--set', 'env.BUS=kafka']), /env.BUS: the chart sets BUS itself/)
  t.match(await renderFailure(['--set', 'existingSecret=']), /existingSecret/)
})
