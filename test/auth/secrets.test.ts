import t from 'tap'
import { scryptSync } from 'node:crypto'
import { hashSecret, verifySecret } from '../../src/auth/index.js'

t.test('new hashes use N=2^15 and verify; a wrong secret does not', async t => {
  const hash = await hashSecret('s3cret')
  t.match(hash, /^scrypt\$32768\$8\$1\$/)
  t.equal(await verifySecret(hash, 's3cret'), true)
  t.equal(await verifySecret(hash, 's3cret!'), false)
})

t.test('hashes made with N=2^14 (earlier releases) still verify', async t => {
  const salt = Buffer.from('0123456789abcdef')
  const legacy = ['scrypt', 16384, 8, 1, salt.toString('base64url'), scryptSync('old', salt, 32, { N: 16384, r: 8, p: 1 }).toString('base64url')].join('$')
  t.equal(await verifySecret(legacy, 'old'), true)
  t.equal(await verifySecret(legacy, 'new'), false)
})
