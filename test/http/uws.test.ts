import t from 'tap'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { spawnGateway } from '../helpers/child.js'
import { sharedInfra } from '../helpers/infra.js'
import { eventually } from '../helpers/settle.js'
import { UWS_BUILDS, UwsUnavailableError, pickUws, type Runtime, type UwsBuild } from '../../src/http/index.js'

const NO_NATIVE_UWS = fileURLToPath(new URL('../fixtures/no-native-uws.cjs', import.meta.url))
const NODE_MAJOR = Number(process.versions.node.split('.')[0])
const RUNTIME: Runtime = { node: 'v24.22.3', abi: '137', platform: 'linux-x64', glibc: '2.36' }

const native = { getParts () {} } as never
const emulated = {} as never
const build = (name: string, load: () => never): UwsBuild => ({ name, load })
const missing = (file: string) => () => { throw new Error(`Cannot find module './${file}'\nRequire stack:\n- /srv/uws.js`) }

t.test('the first build whose native binary loads is used', async t => {
  const second = build('b', () => native)
  t.same(pickUws([build('a', () => native), second], false), { uws: native, build: 'a' })
  t.same(pickUws([build('a', missing('uws_linux_x64_137.node')), second], false), { uws: native, build: 'b' })
  t.same(pickUws([build('a', () => emulated), second], false), { uws: native, build: 'b' }, 'a build that hands back an emulation does not count')
})

t.test('when none loads: refused with the runtime and each build\'s reason, or the emulation when allowed', async t => {
  const builds = [
    build('new 20.57', () => { throw new Error('This version of uWS.js (v20.57.0) supports only Node.js versions 20, 22, 24 and 25.\n\nError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38\' not found (required by /m/uws_linux_x64_137.node)') }),
    build('old 20.30', missing('uws_linux_x64_137.node')),
    build('emulating', () => emulated)
  ]
  let err: unknown
  try {
    pickUws(builds, false, () => emulated, () => RUNTIME)
  } catch (e) {
    err = e
  }
  t.type(err, UwsUnavailableError)
  t.equal((err as Error).message,
    'no native uWebSockets.js build loads on Node v24.22.3 (ABI 137, linux-x64, glibc 2.36): ' +
    'new 20.57: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38\' not found (required by /m/uws_linux_x64_137.node); ' +
    `old 20.30: no binary uws_${process.platform}_${process.arch}_${process.versions.modules}.node; ` +
    'emulating: loaded a Node.js emulation, not its native binary. ' +
    'Supported: Node 24 or 22 on glibc 2.38 or later (Debian 13, Ubuntu 24.04), or Node 20 on older glibc. ' +
    'Refusing to start on the slow Node.js emulation: figures and limits would be wrong. Set UWS_ALLOW_FALLBACK=1 to start anyway.')
})

t.test('off glibc the message says so', async t => {
  t.throws(() => pickUws([build('x', missing('y'))], false, () => emulated, () => ({ ...RUNTIME, platform: 'darwin-arm64', glibc: undefined })),
    { message: /^no native uWebSockets\.js build loads on Node v24\.22\.3 \(ABI 137, darwin-arm64, no glibc\): x: no binary / })
  t.same(pickUws([build('x', missing('y'))], true, () => emulated, () => RUNTIME), { uws: emulated, build: 'emulation' })
})

t.test('the builds are the ones package.json pins', async t => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }
  const pinned = [pkg.dependencies['uWebSockets.js'], pkg.dependencies['uws-node20']].map(spec => spec!.replace(/^npm:(@?[^@]+)@/, '$1 '))
  t.same(UWS_BUILDS.map(b => b.name), pinned)
})

t.test('the process refuses to start when no native uWS build loads, naming the runtime and glibc', async t => {
  const gw = spawnGateway(t, ['start'], { DATA_DIR: t.testdir() }, { nodeArgs: ['--require', NO_NATIVE_UWS] })
  t.equal(await gw.exit, 1)
  t.match(gw.stderr(), new RegExp(`no native uWebSockets\\.js build loads on Node ${process.version} \\(ABI ${process.versions.modules}, ${process.platform}-${process.arch}, glibc [0-9.]+\\): ` +
    '@btc-vision/uwebsockets\\.js 20\\.57\\.0: .*cannot open shared object file.*; @trufflesuite/uws-js-unofficial 20\\.30\\.0-unofficial\\.0: .*Set UWS_ALLOW_FALLBACK=1 to start anyway'))
})

t.test('UWS_ALLOW_FALLBACK=1 starts it anyway, on the emulation, and says so', async t => {
  const gw = spawnGateway(t, ['start'], { DATA_DIR: t.testdir(), UWS_ALLOW_FALLBACK: '1' }, { nodeArgs: ['--require', NO_NATIVE_UWS] })
  t.match(await gw.waitFor('gateway listening'), { uws: 'emulation' })
  gw.proc.kill('SIGTERM')
  t.equal(await gw.exit, 0)
})

t.test('a bad configuration stops start-up with a message naming the variable', async t => {
  const gw = spawnGateway(t, ['start'], { DATA_DIR: t.testdir(), TELEMETRY_LINGER_MS: 'soon' })
  t.equal(await gw.exit, 1)
  t.match(gw.stderr(), /TELEMETRY_LINGER_MS="soon": must be integer/)
})

/**
 * With Kafka and S3, so that kafkajs and the AWS SDK are loaded and used.
 * On Node 22 and 24 no process warning (a deprecation, the AWS SDK's); on
 * Node 20 the AWS SDK warns, once, that its releases from January 2027 need
 * Node 22.
 */
t.test('a start on the native build draws no process warning on Node 22 and later', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const gw = spawnGateway(t, ['start'], {
    DATA_DIR: t.testdir(), LOG_LEVEL: 'info', BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, TOPIC_TELEMETRY: `warn-${randomUUID()}`,
    STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: `warn-${randomUUID()}`,
    AWS_ACCESS_KEY_ID: infra.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: infra.AWS_SECRET_ACCESS_KEY, AWS_REGION: infra.AWS_REGION
  })
  const { port, uws } = await gw.waitFor('gateway listening') as { port: number, uws: string }
  if (NODE_MAJOR >= 22) t.equal(uws, UWS_BUILDS[0]!.name, 'Node 22 and later run on the newer build')
  else t.ok(UWS_BUILDS.some(b => b.name === uws), `Node 20 runs on a native build (${uws})`)
  // Ready once the bus and the store have answered: a broker that has just started may take a moment.
  await eventually(async () => (await fetch(`http://127.0.0.1:${port}/health/ready`)).status, status => status === 200)
  t.pass('Kafka and S3 were used')
  gw.proc.kill('SIGTERM')
  t.equal(await gw.exit, 0)
  const warnings = gw.lines.filter(l => l['msg'] === 'process warning').map(l => (l['warning'] as { message: string }).message)
  if (NODE_MAJOR >= 22) t.same(warnings, [])
  else t.match(warnings, [/^NodeVersionSupportWarning: The AWS SDK for JavaScript \(v3\)\nversions published after the first week of January 2027\nwill require node >=22/])
  t.equal(gw.stderr(), '', 'nothing is printed beside the log')
})
