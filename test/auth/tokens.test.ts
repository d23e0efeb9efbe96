import t, { type Test } from 'tap'
import { SignJWT, generateKeyPair } from 'jose'
import { LmdbKeyVault, KeyStore, TOKEN_LEEWAY_S, TokenVerifier } from '../../src/auth/index.js'
import { openState } from '../../src/state/index.js'

type SigningKey = Parameters<SignJWT['sign']>[0]

async function setup (t: Test, clock = { now: Date.now() }) {
  const state = openState(t.testdir())
  t.teardown(() => state.close())
  const keys = new KeyStore(new LmdbKeyVault(state), { tokenTtlS: 3600, rotationS: 86400, publishLeadS: 900 })
  await keys.init()
  const verifier = new TokenVerifier(keys, { issuer: 'https://gw/', audiences: ['evidence-gateway'], now: () => clock.now })
  const sign = (claims: Record<string, unknown>, opts: { iss?: string, aud?: string, exp?: number, key?: SigningKey, kid?: string } = {}) =>
    new SignJWT({ client_id: 'c1', scope: 'asset:track:write', ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: opts.kid ?? keys.current.kid })
      .setIssuer(opts.iss ?? 'https://gw/')
      .setAudience(opts.aud ?? 'evidence-gateway')
      .setExpirationTime(opts.exp ?? Math.floor(clock.now / 1000) + 600)
      .sign(opts.key ?? keys.current.privateKey)
  return { verifier, sign }
}


t.test('a valid token with the scope passes, and its claims come back', async t => {
  const { verifier, sign } = await setup(t)
  const claims = await verifier.verify(`Bearer ${await sign({ tenant: 'acme' })}`, 'asset:track:write')
  t.equal(claims.client_id, 'c1')
  t.equal(claims.tenant, 'acme')
  const again = await verifier.verify(`bearer ${await sign({})}`, 'asset:track:write')
  t.equal(again.tenant, 'c1', 'tenant defaults to the client id; the scheme is case-insensitive')
})

t.test('401 for a missing, malformed, forged, foreign or expired token', async t => {
  const { verifier, sign } = await setup(t)
  const other = await generateKeyPair('RS256')
  const cases: Array<[string | undefined, RegExp]> = [
    [undefined, /^missing Bearer token$/],
    ['Basic abc', /^missing Bearer token$/],
    ['Bearer ', /^empty Bearer token$/],
    ['Bearer not.a.jwt', /^auth_failed:malformed$/],
    [`Bearer ${await sign({}, { key: other.privateKey })}`, /^auth_failed:invalid_signature$/],
    [`Bearer ${await sign({}, { iss: 'https://elsewhere/' })}`, /^auth_failed:wrong_issuer$/],
    [`Bearer ${await sign({}, { aud: 'other-api' })}`, /^auth_failed:wrong_audience$/],
    [`Bearer ${await sign({}, { kid: 'unknown' })}`, /^auth_failed:invalid_signature$/],
    [`Bearer ${await sign({}, { exp: Math.floor(Date.now() / 1000) - 40 })}`, /^auth_failed:expired$/]
  ]
  for (const [header, message] of cases) {
    await t.rejects(async () => verifier.verify(header, 'asset:track:write'), { code: 'unauthorized', status: 401, message }, String(header).slice(0, 40))
  }
})

t.test('403 for a valid token without the route scope', async t => {
  const { verifier, sign } = await setup(t)
  await t.rejects(async () => verifier.verify(`Bearer ${await sign({ scope: 'stream:write' })}`, 'asset:track:write'), { code: 'forbidden', status: 403 })
})

t.test('a cached token still expires', async t => {
  const clock = { now: Date.now() }
  const { verifier, sign } = await setup(t, clock)
  const token = await sign({}, { exp: Math.floor(clock.now / 1000) + 60 })
  await verifier.verify(`Bearer ${token}`, 'asset:track:write')
  clock.now += 89_000
  t.notOk(verifier.verify(`Bearer ${token}`, 'asset:track:write') instanceof Promise, 'still answered from the cache within the leeway past exp')
  clock.now += 2_000
  await t.rejects(async () => verifier.verify(`Bearer ${token}`, 'asset:track:write'), { code: 'unauthorized', status: 401 }, 'rejected once expired')
})

t.test('30 s of clock skew on exp, nbf and iat, as on every token check of the service', async t => {
  const clock = { now: Date.now() }
  const { verifier, sign } = await setup(t, clock)
  const nowS = Math.floor(clock.now / 1000)
  const check = async (claims: Record<string, unknown>, exp = nowS + 600): Promise<string> => {
    try {
      await verifier.verify(`Bearer ${await sign(claims, { exp })}`, 'asset:track:write')
      return 'passed'
    } catch (err) {
      return (err as Error).message
    }
  }
  t.equal(TOKEN_LEEWAY_S, 30)
  t.equal(await check({ iat: nowS + 30 }), 'passed', 'issued 30 s ahead of this clock (another machine\'s)')
  t.equal(await check({ iat: nowS + 32 }), 'auth_failed:malformed', 'issued further ahead')
  t.equal(await check({ nbf: nowS + 30 }), 'passed', 'valid from 30 s ahead')
  t.equal(await check({ nbf: nowS + 32 }), 'auth_failed:malformed', 'not valid yet')
  t.equal(await check({}, nowS - 29), 'passed', 'expired 29 s ago on this clock')
  t.equal(await check({}, nowS - 32), 'auth_failed:expired', 'expired past the leeway')
})

t.test('the cache tells apart headers that end alike, and a forged one evicts nothing', async t => {
  const { verifier, sign } = await setup(t)
  const token = await sign({})
  const header = `Bearer ${token}`
  await verifier.verify(header, 'asset:track:write')
  t.notOk(verifier.verify(header, 'asset:track:write') instanceof Promise, 'the verified header is answered from the cache')
  // The same signature (so the same last characters) under another payload.
  const [head, payload, signature] = token.split('.')
  const forged = `Bearer ${head}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), client_id: 'someone-else' })).toString('base64url')}.${signature}`
  t.equal(forged.slice(-32), header.slice(-32))
  await t.rejects(async () => verifier.verify(forged, 'asset:track:write'), { code: 'unauthorized', message: /^auth_failed:invalid_signature$/ }, 'not taken for the cached one')
  t.notOk(verifier.verify(header, 'asset:track:write') instanceof Promise, 'the genuine header is still cached')
})

t.test('claims carry the tenant key; an id outside the grammar is 403 with the claim named', async t => {
  const { verifier, sign } = await setup(t)
  const ok = await verifier.verify(`Bearer ${await sign({ client_id: 'cam-7', tenant: 'acme' })}`, 'asset:track:write')
  t.equal(ok.tenantKey, 'cam-7', 'this issuer\'s tokens: the bare client_id')
  t.equal(ok.iss, 'https://gw/')
  for (const bad of ['../x', 'a/b', '..', 'x'.repeat(129), 'nul\u0000', 'lone\ud800', 'tilde~tag', '']) {
    if (bad !== '') {
      await t.rejects(async () => verifier.verify(`Bearer ${await sign({ client_id: bad })}`, 'asset:track:write'), { code: 'forbidden', status: 403, details: { authorization: /^client_id claim must be/ } }, `client_id ${JSON.stringify(bad)}`)
    }
    await t.rejects(async () => verifier.verify(`Bearer ${await sign({ tenant: bad })}`, 'asset:track:write'), { code: 'forbidden', status: 403, details: { authorization: /^tenant claim must be/ } }, `tenant ${JSON.stringify(bad)}`)
  }
  await t.rejects(async () => verifier.verify(`Bearer ${await sign({ client_id: undefined, sub: '../x' })}`, 'asset:track:write'), { code: 'forbidden' }, 'sub standing in for client_id is held to the same grammar')
})
