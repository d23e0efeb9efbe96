import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { runGateway } from '../helpers/child.js'

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

/** One line on stderr, naming what it must, and no stack. */
function oneLine (t: any, stderr: string, ...names: RegExp[]): void {
  t.equal(stderr.trimEnd().split('\n').length, 1, `one line: ${stderr}`)
  t.notMatch(stderr, /\n\s+at /, 'no stack')
  for (const name of names) t.match(stderr, name)
}

t.test('--version and --help answer without any configuration, even a broken one', async t => {
  for (const flag of ['--version', '-v']) {
    const res = await runGateway([flag], { PORT: 'not a port' })
    t.same([res.code, res.stdout, res.stderr], [0, `${version}\n`, ''], flag)
  }
  const help = await runGateway(['--help'], { PORT: 'not a port' })
  t.equal(help.code, 0)
  for (const word of ['start', '--workers', 'clients add', 'clients remove', 'clients rotate', 'clients hash', 'tail', '--follow', '--version', 'README', 'docs/', 'Exit codes']) t.match(help.stdout, word)
  t.match(help.stdout, /^ {2}2 {2}usage/m, 'each exit code explained')
})

t.test('usage errors exit 2; failures exit 1 with one line naming the cause', async t => {
  const dir = t.testdir()
  const unknown = await runGateway(['frobnicate'], { DATA_DIR: dir })
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /unknown command frobnicate/)

  const remove = await runGateway(['clients', 'remove', 'nobody'], { DATA_DIR: dir })
  t.equal(remove.code, 1)
  oneLine(t, remove.stderr, /no client nobody in /)

  const tail = await runGateway(['tail', 'asset.telemetry'], { DATA_DIR: dir })
  t.equal(tail.code, 1, 'a topic the gateway never writes is not an empty log')
  oneLine(t, tail.stderr, /no topic asset\.telemetry/, /asset\.telemetry\.v1/, /TOPIC_TELEMETRY/)
  const known = await runGateway(['tail', 'asset.telemetry.v1'], { DATA_DIR: dir })
  t.same([known.code, known.stdout], [0, ''], 'a known topic with nothing in it')

  const config = await runGateway(['clients', 'list'], { DATA_DIR: dir, PORT: 'x' })
  t.equal(config.code, 1)
  t.match(config.stderr, /PORT="x": must be integer/)
})

t.test('clients add says when ingest will refuse the audience it grants', async t => {
  const dir = t.testdir()
  const odd = await runGateway(['clients', 'add', 'cam-1', '--audience', 'other-api', '--scope', 'asset:track:write'], { DATA_DIR: dir })
  t.equal(odd.code, 0, 'the client is added: another service may accept that audience')
  oneLine(t, odd.stderr, /AUTH_AUDIENCE/, /other-api/, /evidence-gateway/)
  const usual = await runGateway(['clients', 'add', 'cam-2', '--audience', 'evidence-gateway', '--scope', 'asset:track:write'], { DATA_DIR: dir })
  t.same([usual.code, usual.stderr], [0, ''])
})

t.test('a DATA_DIR the gateway cannot use stops the start with one line naming it; the stack at debug level', async t => {
  const file = join(t.testdir(), 'not-a-folder')
  writeFileSync(file, 'x')
  const res = await runGateway(['start'], { DATA_DIR: file, PORT: '0', HARNESS_PORT: '0' })
  t.equal(res.code, 1)
  oneLine(t, res.stderr, new RegExp(`^gateway: DATA_DIR=${file}: cannot open the state database: .+; DATA_DIR must be a directory`))
  const debug = await runGateway(['start'], { DATA_DIR: file, PORT: '0', HARNESS_PORT: '0', LOG_LEVEL: 'debug' })
  t.equal(debug.code, 1)
  t.match(debug.stderr, /\n\s+at /, 'the stack at debug level')
})

t.test('a bucket the gateway cannot reach stops the start with one line naming the bucket and the endpoint', async t => {
  const res = await runGateway(['start'], {
    DATA_DIR: t.testdir(), PORT: '0', HARNESS_PORT: '0', ROLES: 'auth,ingest',
    STORAGE: 's3', S3_ENDPOINT: 'http://127.0.0.1:9', S3_BUCKET: 'missing-bucket', S3_FORCE_PATH_STYLE: 'true', S3_REQUEST_TIMEOUT_MS: '2000',
    AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'y', AWS_REGION: 'us-east-1'
  })
  t.equal(res.code, 1)
  const lines = res.stderr.trimEnd().split('\n').filter(l => l.startsWith('gateway: '))
  t.equal(lines.length, 1, res.stderr)
  t.match(lines[0], /^gateway: S3_BUCKET=missing-bucket at http:\/\/127\.0\.0\.1:9: cannot start the object store: .+; check that the bucket exists/)
  t.notMatch(res.stderr, /\n\s+at /, 'no stack')
})
