import t from 'tap'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { KeyWrap } from '../../src/auth/index.js'

t.test('a wrapped key opens only with the same file\'s key and under its own kid', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'key-wrap-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const file = (name: string): string => { const path = join(dir, name); writeFileSync(path, randomBytes(32)); return path }
  const dataDir = join(dir, 'data')
  const wrap = KeyWrap.fromFile(file('a.key'), dataDir)
  const pem = '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n'
  const wrapped = wrap.wrap(pem, 'kid-1')
  t.notMatch(wrapped, /PRIVATE KEY/)
  t.not(wrap.wrap(pem, 'kid-1'), wrapped, 'a fresh IV each time')
  t.equal(wrap.unwrap(wrapped, 'kid-1'), pem)
  t.throws(() => wrap.unwrap(wrapped, 'kid-2'), /wrapped by another AUTH_KEY_WRAP_FILE/, 'moved under another kid')
  t.throws(() => KeyWrap.fromFile(file('b.key'), dataDir).unwrap(wrapped, 'kid-1'), /wrapped by another AUTH_KEY_WRAP_FILE/)
  // The first character of the ciphertext: every bit of it counts (the last one may carry ignored bits).
  const [version, iv, tag, sealed] = wrapped.split('.') as [string, string, string, string]
  const tampered = [version, iv, tag, (sealed[0] === 'A' ? 'B' : 'A') + sealed.slice(1)].join('.')
  t.throws(() => wrap.unwrap(tampered, 'kid-1'), /wrapped by another/, 'tampered')
  t.throws(() => wrap.unwrap('v2.a.b.c', 'kid-1'), /not a wrapped key/)
  t.throws(() => KeyWrap.fromFile(join(dir, 'missing.key'), dataDir), /AUTH_KEY_WRAP_FILE .*missing\.key/)
})
