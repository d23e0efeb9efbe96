import t from 'tap'
import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import { cpSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'lmdb'
import { SignJWT } from 'jose'
import { spawnGateway, type Child } from '../helpers/child.js'
import { DEVICE, INGEST_AUDIENCE } from './support/target.js'
import { send, type Outcome } from './support/wire.js'

/**
 * Issue 38, row 6: any local user read `DATA_DIR/state.lmdb` (0644) and
 * found the signing keys as clear PKCS#8, and read uploaded media (0644 in
 * 0755 folders). Here the gateway starts under a permissive umask (002),
 * with AUTH_KEY_WRAP_FILE outside DATA_DIR; a copy of DATA_DIR is what an
 * attacker who got the files would hold.
 */

const example = JSON.parse(readFileSync(new URL('../fixtures/asset-track.json', import.meta.url), 'utf8'))
const show = (o: Outcome): string => o.kind === 'answer' ? String(o.status) : o.kind

function walk (dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(name => join(dir, String(name)))
}

t.test('row 6: DATA_DIR 0700 and its files 0600 under umask 002; the signing keys wrapped by a key outside it; media private', async t => {
  const before = process.umask(0o002)
  t.teardown(() => { process.umask(before) })
  const root = mkdtempSync(join(tmpdir(), 'gw-secrets-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const dataDir = join(root, 'data')
  const wrapFile = join(root, 'wrap.key')
  writeFileSync(wrapFile, randomBytes(32), { mode: 0o600 })
  const clientsFile = join(root, 'clients.json')
  writeFileSync(clientsFile, JSON.stringify([DEVICE]))
  const env = { DATA_DIR: dataDir, AUTH_CLIENTS_FILE: clientsFile, AUTH_KEY_WRAP_FILE: wrapFile, LOG_LEVEL: 'info' }
  const start = async (extra: Record<string, string> = {}): Promise<{ child: Child, port: number }> => {
    const child = spawnGateway(t, ['start'], { ...env, ...extra })
    return { child, port: (await child.waitFor('gateway listening'))['port'] as number }
  }
  const login = async (port: number): Promise<string> => {
    const res = await send(port, { method: 'POST', target: '/api/v1/login', headers: [['Content-Type', 'application/json']], body: JSON.stringify({ grant_type: 'client_credentials', client_id: DEVICE.client_id, client_secret: DEVICE.client_secret, audience: INGEST_AUDIENCE }) })
    return (res as { json: { access_token: string } }).json.access_token
  }
  const track = (port: number, token: string): Promise<Outcome> => send(port, { method: 'POST', target: '/v1/asset/track', headers: [['Authorization', `Bearer ${token}`], ['Content-Type', 'application/json'], ['X-Request-Id', randomUUID()], ['X-Request-Timestamp', String(Math.floor(Date.now() / 1000))]], body: JSON.stringify(example) })

  const first = await start()
  const token = await login(first.port)
  const media = randomBytes(64 * 1024)
  const envelope = { schema_version: '1.0', event_type: 'warehouse.restricted_zone.person', event_id: 'evt-private', occurred_at: '2026-11-22T08:00:00Z', subject: { device_id: 'cam-3' }, media: [{ ref: 'front', checksum_sha256: createHash('sha256').update(media).digest('hex') }] }
  const body = Buffer.concat([
    Buffer.from(`--b\r\nContent-Disposition: form-data; name="envelope"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(envelope)}\r\n--b\r\nContent-Disposition: form-data; name="media"; filename="a.mp4"\r\nContent-Type: video/mp4\r\n\r\n`),
    media, Buffer.from('\r\n--b--\r\n')
  ])
  const uploaded = await send(first.port, { method: 'POST', target: '/v1/stream/events', headers: [['Authorization', `Bearer ${token}`], ['Content-Type', 'multipart/form-data; boundary=b']], body })
  t.match(uploaded, { kind: 'answer', status: 202 }, 'the honest upload is stored')

  t.equal(lstatSync(dataDir).mode & 0o777, 0o700, 'DATA_DIR is 0700')
  const open_ = walk(dataDir).filter(p => (lstatSync(p).mode & 0o077) !== 0).map(p => `${p.slice(dataDir.length)} ${(lstatSync(p).mode & 0o777).toString(8)}`)
  t.same(open_, [], 'nothing under DATA_DIR is readable by group or others')
  const stored = walk(join(dataDir, 'objects')).filter(p => lstatSync(p).isFile() && !p.includes('.partial'))
  t.equal(stored.length, 1, 'the media object')
  t.equal(lstatSync(stored[0]!).mode & 0o777, 0o600, 'the media object is 0600')

  // What a local user who read the files holds: no private key, in any form jose or openssl could use.
  const raw = readFileSync(join(dataDir, 'state.lmdb'))
  t.equal(raw.indexOf('PRIVATE KEY'), -1, 'no PEM in state.lmdb')
  const copy = join(root, 'stolen')
  mkdirSync(copy)
  cpSync(join(dataDir, 'state.lmdb'), join(copy, 'state.lmdb'))
  const stolen = open({ path: join(copy, 'state.lmdb'), maxDbs: 32, compression: false })
  const keys = [...stolen.openDB<Record<string, unknown>, string>({ name: 'auth-keys' }).getRange()].map(e => e.value)
  await stolen.close()
  t.ok(keys.length > 0 && keys.every(k => k['private_pem'] === '' && typeof k['private_wrapped'] === 'string'), `${keys.length} key(s), each wrapped`)
  // The best the attacker can do with the public half: a token under the vault's kid signed with a key of its own.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const now = Math.floor(Date.now() / 1000)
  const forged = await new SignJWT({ client_id: 'other-fleet', scope: 'asset:track:write stream:write' }).setProtectedHeader({ alg: 'RS256', kid: String(keys[0]!['kid']) })
    .setIssuer('http://127.0.0.1:8080/').setSubject('other-fleet').setAudience(INGEST_AUDIENCE).setIssuedAt(now).setExpirationTime(now + 600).sign(privateKey)
  const attacker = await track(first.port, forged)
  const honest = await track(first.port, token)
  t.comment(`attacker's token from the files: ${show(attacker)}; honest telemetry meanwhile: ${show(honest)}`)
  t.match(attacker, { kind: 'answer', status: 401 })
  t.match(honest, { kind: 'answer', status: 200 })

  first.child.proc.kill('SIGTERM')
  await first.child.exit
  const without = spawnGateway(t, ['start'], { ...env, AUTH_KEY_WRAP_FILE: '' })
  t.equal(await without.exit, 1, 'without AUTH_KEY_WRAP_FILE the stored keys sign nothing: the start fails')
  t.match(without.stderr(), /is wrapped: AUTH_KEY_WRAP_FILE is needed/)
  const again = await start()
  t.match(await track(again.port, token), { kind: 'answer', status: 200 }, 'with it, a restart signs and verifies with the same keys')
  t.match(await track(again.port, await login(again.port)), { kind: 'answer', status: 200 })
})

t.test('row 6: AUTH_KEY_WRAP_FILE inside DATA_DIR, or shorter than 32 bytes, is refused at start naming it', async t => {
  const root = mkdtempSync(join(tmpdir(), 'gw-secrets-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const inside = join(root, 'wrap.key')
  writeFileSync(inside, randomBytes(32))
  const short = join(root, '..', `${randomUUID()}.key`)
  writeFileSync(short, randomBytes(16))
  t.teardown(() => rmSync(short, { force: true }))
  for (const [file, message] of [[inside, /AUTH_KEY_WRAP_FILE .* is inside DATA_DIR/], [short, /AUTH_KEY_WRAP_FILE .* holds 16 bytes; at least 32/]] as const) {
    const child = spawnGateway(t, ['start'], { DATA_DIR: root, AUTH_KEY_WRAP_FILE: file })
    t.equal(await child.exit, 1)
    t.match(child.stderr(), message)
  }
})
