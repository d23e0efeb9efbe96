import t from 'tap'
import { readFileSync } from 'node:fs'
import { parse } from 'yaml'
import { variables } from '../../src/config/index.js'

// No container engine runs where this project is built: the files are checked for shape, not run.
const deploy = (name: string): string => readFileSync(new URL(`../../deploy/${name}`, import.meta.url), 'utf8')
const compose = parse(deploy('compose.yaml'), { merge: true })
const replicas = ['gateway-1', 'gateway-2', 'gateway-3']

t.test('three gateway replicas, each with its own volume, behind a load balancer, with Redpanda and MinIO', async t => {
  t.same(Object.keys(compose.services).sort(), ['gateway-1', 'gateway-2', 'gateway-3', 'lb', 'minio', 'redpanda'])
  const volumes = replicas.map(r => compose.services[r].volumes[0].split(':')[0])
  t.equal(new Set(volumes).size, 3, 'no two replicas share a DATA_DIR')
  for (const v of volumes) t.ok(v in compose.volumes, `${v} is declared`)
  for (const r of replicas) {
    t.notOk(compose.services[r].ports, `${r} publishes no port: only the load balancer is reachable`)
    t.same(compose.services[r].depends_on, { redpanda: { condition: 'service_healthy' }, minio: { condition: 'service_healthy' } })
  }
  t.same(compose.services.lb.ports, ['8080:8080', '8081:8081'])
  t.match(compose.services.lb.image, /^haproxy:/, 'the official HAProxy image')
})

t.test('every replica runs in cluster mode with the same settings, and only known variables', async t => {
  const known = new Set([...variables.map(v => v.name), 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'])
  const envs = replicas.map(r => compose.services[r].environment)
  for (const env of envs) {
    t.same(env, envs[0], 'identical environment')
    t.match(env, { BUS: 'kafka', STORAGE: 's3', KAFKA_BROKERS: 'redpanda:9092', S3_ENDPOINT: 'http://minio:9000' })
    t.same(Object.keys(env).filter(k => !known.has(k)), [], 'no unknown variable')
  }
})

t.test('secrets come from the environment and compose refuses to start without them', async t => {
  const env = compose.services['gateway-1'].environment
  t.match(env.HARNESS_TENANT_ASSERTION_SECRET, /^\$\{HARNESS_TENANT_ASSERTION_SECRET:\?/)
  t.match(env.AWS_SECRET_ACCESS_KEY, /^\$\{MINIO_ROOT_PASSWORD:\?/)
  t.equal(compose.services.minio.environment.MINIO_ROOT_PASSWORD, env.AWS_SECRET_ACCESS_KEY, 'MinIO and the gateways share one password')
})

t.test('HAProxy sends both ports to every replica and checks readiness', async t => {
  const cfg = deploy('haproxy.cfg')
  t.match(cfg, /^\s*option forwardfor/m, 'X-Forwarded-For, which AUTH_CLIENT_ADDRESS_HEADER names')
  t.equal(compose.services['gateway-1'].environment.AUTH_CLIENT_ADDRESS_HEADER, 'x-forwarded-for')
  for (const port of [8080, 8081]) {
    t.match(cfg, new RegExp(`bind :${port}\\b`))
    for (const r of replicas) t.match(cfg, new RegExp(`server ${r} ${r}:${port} check`), `${r}:${port}`)
  }
  t.equal((cfg.match(/option httpchk GET \/health\/ready/g) ?? []).length, 2)
})
