import t from 'tap'
import { createSign, generateKeyPairSync } from 'node:crypto'
import { SignJWT, createLocalJWKSet, exportJWK, generateKeyPair, type JWTPayload } from 'jose'
import { bearerToken, verifyJwt, MAX_TOKEN_LIFETIME_S, type JwtRules, type VerifyKey } from '../../src/auth/index.js'

const detail = (fn: () => unknown): string => {
  try {
    fn()
  } catch (err) {
    return (err as Error).message
  }
  return 'passed'
}

t.test('one Bearer grammar: the scheme, spaces, one b64token', async t => {
  const rows: Array<[string | undefined, string]> = [
    [undefined, 'missing Bearer token'],
    ['Basic dXNlcjpwdw==', 'missing Bearer token'],
    ['', 'empty Bearer token'],
    ['Bearer', 'empty Bearer token'],
    ['Bearer    ', 'empty Bearer token'],
    ['Bearer\tabc', 'auth_failed:malformed'],
    ['Bearer abc def', 'auth_failed:malformed'],
    ['Bearer abc\u0000', 'auth_failed:malformed'],
    ['Bearer a"b', 'auth_failed:malformed'],
    ['Bearerabc', 'missing Bearer token'],
    ['   ', 'empty Bearer token'],
    ['xBearer abc', 'missing Bearer token'],
    ['Token Bearer abc', 'missing Bearer token'],
    ['xBearer', 'missing Bearer token'],
    ['Token Bearer\tabc', 'missing Bearer token'],
    [' Bearer abc', 'missing Bearer token']
  ]
  for (const [header, expected] of rows) t.equal(detail(() => bearerToken(header)), expected, JSON.stringify(header))
  t.equal(bearerToken('Bearer abc.def-_~+/=='), 'abc.def-_~+/==')
  t.equal(bearerToken('bearer  abc  '), 'abc', 'the scheme is case-insensitive; spaces around the token are tolerated')
})

t.test('time claims: exp required and bounded, nbf and iat not in the future', async t => {
  const { publicKey, privateKey } = await generateKeyPair('RS256')
  const now = Math.floor(Date.now() / 1000)
  const sign = (claims: JWTPayload) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256' }).sign(privateKey)
  // The verifier's clock is pinned to the one the claims were written from, so a slow machine cannot move a bound.
  const rules = { algorithms: ['RS256'], leewayS: 30, now: now * 1000 }
  const check = async (claims: JWTPayload): Promise<string> => {
    try {
      await verifyJwt(await sign(claims), publicKey, rules)
      return 'passed'
    } catch (err) {
      return (err as Error).message
    }
  }
  t.equal(await check({ exp: now + 60 }), 'passed')
  t.equal(await check({}), 'auth_failed:malformed', 'a token without exp is not one we accept')
  t.equal(await check({ exp: now - 31 }), 'auth_failed:expired')
  t.equal(await check({ exp: now - 29 }), 'passed', 'within the leeway')
  t.equal(await check({ exp: now + 60, nbf: now + 3600 }), 'auth_failed:malformed', 'not valid yet')
  t.equal(await check({ exp: now + 60, iat: now + 3600 }), 'auth_failed:malformed', 'issued in the future')
  t.equal(await check({ exp: now + 60, iat: now + 20 }), 'passed', 'iat within the leeway')
  t.equal(await check({ exp: now + 30, iat: now + 30 }), 'passed', 'iat at the leeway\'s edge')
  t.equal(await check({ exp: now + 60, iat: now + 31 }), 'auth_failed:malformed', 'iat a second past the leeway')
  t.equal(MAX_TOKEN_LIFETIME_S, 31 * 24 * 3600, 'a token may live 31 days')
  t.equal(await check({ exp: now + 30 * 24 * 3600 }), 'passed', 'a 30-day token')
  t.equal(await check({ exp: now + MAX_TOKEN_LIFETIME_S }), 'passed', 'exp at the bound')
  t.equal(await check({ exp: now + MAX_TOKEN_LIFETIME_S + 1 }), 'auth_failed:malformed', 'a second past the bound')
  t.equal(await check({ exp: now + MAX_TOKEN_LIFETIME_S + 60 }), 'auth_failed:malformed', 'an absurd exp')
  t.equal(await check({ exp: 253402300799 }), 'auth_failed:malformed', 'year 9999')
})

t.test('an algorithm outside the rules is malformed before any key is tried', async t => {
  const secret = new TextEncoder().encode('k'.repeat(32))
  const hs = await new SignJWT({ exp: Math.floor(Date.now() / 1000) + 60 }).setProtectedHeader({ alg: 'HS256' }).sign(secret)
  await t.rejects(verifyJwt(hs, secret, { algorithms: ['RS256'], leewayS: 0 }), { message: 'auth_failed:malformed', status: 401 })
  const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(`{"exp":${Math.floor(Date.now() / 1000) + 60}}`).toString('base64url')}.`
  await t.rejects(verifyJwt(none, secret, { algorithms: ['RS256', 'HS256'], leewayS: 0 }), { message: 'auth_failed:malformed' })
})

t.test('a kid that is not a string is a malformed header, not a key that failed to match (RFC 7515 §4.1.4)', async t => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const payload = Buffer.from(JSON.stringify({ exp: Math.floor(Date.now() / 1000) + 60 })).toString('base64url')
  for (const kid of [{ $ne: null }, 42, ['k'], null]) {
    const input = `${Buffer.from(JSON.stringify({ alg: 'RS256', kid })).toString('base64url')}.${payload}`
    const signature = createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')
    const keySet = createLocalJWKSet({ keys: [{ ...await exportJWK(publicKey), kid: 'k' }] })
    await t.rejects(verifyJwt(`${input}.${signature}`, keySet, { algorithms: ['RS256'], leewayS: 0 }), { message: 'auth_failed:malformed' }, `kid ${JSON.stringify(kid)} against a key set`)
    await t.rejects(verifyJwt(`${input}.${signature}`, publicKey, { algorithms: ['RS256'], leewayS: 0 }), { message: 'auth_failed:malformed' }, `kid ${JSON.stringify(kid)} against one key`)
  }
})

t.test('issuer and audience are checked when the rules name them, and each failure has its own detail', async t => {
  const { publicKey, privateKey } = await generateKeyPair('RS256')
  const other = await generateKeyPair('RS256')
  const now = Math.floor(Date.now() / 1000)
  const exp = now + 60
  const sign = (claims: JWTPayload, key = privateKey, kid?: string) =>
    new SignJWT(claims).setProtectedHeader(kid === undefined ? { alg: 'RS256' } : { alg: 'RS256', kid }).sign(key)
  const check = async (token: string, rules: Partial<JwtRules> = {}, key: VerifyKey = publicKey): Promise<string> => {
    try {
      await verifyJwt(token, key, { algorithms: ['RS256'], leewayS: 0, now: now * 1000, ...rules })
      return 'passed'
    } catch (err) {
      return (err as Error).message
    }
  }
  const token = await sign({ exp, iss: 'https://issuer.example', aud: 'gateway' })
  t.equal(await check(token), 'passed', 'no issuer or audience rule: any')
  t.equal(await check(token, { issuer: 'https://issuer.example', audience: 'gateway' }), 'passed')
  t.equal(await check(token, { issuer: 'https://other.example' }), 'auth_failed:wrong_issuer')
  t.equal(await check(token, { audience: 'harness' }), 'auth_failed:wrong_audience')
  t.equal(await check(token, { audience: ['harness', 'gateway'] }), 'passed', 'one of several audiences')
  t.equal(await check(token, { audience: ['harness', 'console'] }), 'auth_failed:wrong_audience', 'none of several audiences')
  t.equal(await check(await sign({ exp }), { issuer: 'https://issuer.example' }), 'auth_failed:wrong_issuer', 'no iss at all')
  t.equal(await check(await sign({ exp, iss: 'https://issuer.example' }, other.privateKey)), 'auth_failed:invalid_signature', 'signed by another key')

  const jwk = { ...await exportJWK(publicKey), alg: 'RS256' }
  const keySet = createLocalJWKSet({ keys: [{ ...jwk, kid: 'k1' }, { ...await exportJWK(other.publicKey), alg: 'RS256', kid: 'k2' }] })
  t.equal(await check(await sign({ exp }, privateKey, 'k1'), {}, keySet), 'passed', 'a string kid found in the key set')
  t.equal(await check(await sign({ exp }, privateKey, 'k2'), {}, keySet), 'auth_failed:invalid_signature', 'the kid of another key')
  t.equal(await check(await sign({ exp }, privateKey, 'k3'), {}, keySet), 'auth_failed:invalid_signature', 'a kid no key has')
  const twins = createLocalJWKSet({ keys: [{ ...jwk, kid: 'k1' }, { ...await exportJWK(other.publicKey), alg: 'RS256', kid: 'k1' }] })
  t.equal(await check(await sign({ exp }, privateKey, 'k1'), {}, twins), 'auth_failed:invalid_signature', 'two keys under one kid, neither chosen')
})

t.test('a correctly signed token whose claims are not a JSON object is malformed, not a bad signature', async t => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  for (const claims of ['not json', '[1,2]', '"a string"']) {
    const input = `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(claims).toString('base64url')}`
    const signature = createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')
    await t.rejects(verifyJwt(`${input}.${signature}`, publicKey, { algorithms: ['RS256'], leewayS: 0 }), { message: 'auth_failed:malformed' }, claims)
  }
})
