import t from 'tap'
import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { PutObjectCommand } from '@aws-sdk/client-s3'
import { calculateJwkThumbprint, decodeProtectedHeader, type JWK } from 'jose'
import '../helpers/no-keepalive.js'
import { addClient, startCluster } from '../helpers/cluster.js'
import { login } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { multipartBody, postEvidence } from '../helpers/multipart.js'
import { gatewayKeys, s3Client } from '../helpers/s3.js'

const jwks = async (url: string): Promise<string> => (await fetch(`${url}/.well-known/jwks.json`)).text()
const kids = (set: string): string[] => (JSON.parse(set) as { keys: Array<{ kid: string }> }).keys.map(k => k.kid)

/**
 * Whether `token` passes node `url`'s token check: a body without an
 * envelope is 400 once the token is accepted (nothing is claimed or
 * stored), and 401 when it is not.
 */
async function tokenCheck (url: string, token: string): Promise<number> {
  const res = await postEvidence(url, token, multipartBody([{ name: 'other', contentType: 'text/plain', data: 'x' }]))
  return res.status
}

t.test('three nodes: one key set, a client added once logs in anywhere, a token of any node verifies on all', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const cluster = await startCluster(t, infra, 3, { AUTH_KEY_PUBLISH_LEAD_S: '5' })
  const [n1, n2, n3] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0], typeof cluster.nodes[0]]
  const s3 = s3Client(infra)

  t.same(await gatewayKeys(s3, cluster.bucket, 'auth/keys/'), ['auth/keys/000000000001.json'], 'three nodes started at once wrote one key')
  const sets = await Promise.all(cluster.nodes.map(n => jwks(n.url)))
  t.equal(sets[1], sets[0], 'node 2 publishes the key set of node 1')
  t.equal(sets[2], sets[0], 'node 3 too')

  const client = await addClient(cluster, 'cam-cluster', ['stream:write'])
  t.same(await gatewayKeys(s3, cluster.bucket, 'auth/clients/'), ['auth/clients/cam-cluster.json'], '`gateway clients add` wrote the client to S3')
  const token = await login(n1.url, client)
  t.ok(kids(sets[0]!).includes(decodeProtectedHeader(token).kid!), 'signed with the published key')
  t.equal(await tokenCheck(n1.url, token), 400, 'node 1 accepts its own token')
  t.equal(await tokenCheck(n2.url, token), 400, 'node 2 accepts it')
  t.equal(await tokenCheck(n3.url, token), 400, 'node 3 accepts it')
  t.equal(await tokenCheck(n2.url, token.slice(0, -4) + 'AAAA'), 401, 'a forged signature is still refused')
  t.type(await login(n3.url, client), 'string', 'the client added once logs in on node 3 too')

  // Another node rotates: the next epoch's key appears in S3.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const { kty, n, e } = createPublicKey(privateKey).export({ format: 'jwk' })
  const jwk = { kty, n, e } as JWK
  const kid = await calculateJwkThumbprint(jwk)
  const doc = { kid, epoch: 2, created_at: Date.now(), private_pem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(), public_jwk: { ...jwk, kid } }
  await s3.send(new PutObjectCommand({ Bucket: cluster.bucket, Key: '_gateway/auth/keys/000000000002.json', Body: JSON.stringify(doc), ContentType: 'application/json' }))
  const rotated = await eventually(() => Promise.all(cluster.nodes.map(node => jwks(node.url))), s => s.every(set => set === s[0] && kids(set).includes(kid)), 30_000)
  t.ok(rotated.every(set => kids(set).includes(kid)), 'every node publishes the new key within seconds')
  t.equal(new Set(rotated).size, 1, 'and the same set')
  t.ok(kids(rotated[0]!).includes(decodeProtectedHeader(token).kid!), 'the old key stays published for its tokens')
  const newer = await eventually(() => login(n2.url, client), token => decodeProtectedHeader(token).kid === kid, 30_000, 500)
  t.equal(decodeProtectedHeader(newer).kid, kid, 'the newest key signs once AUTH_KEY_PUBLISH_LEAD_S has passed')
  t.equal(await tokenCheck(n3.url, newer), 400, 'and its tokens verify on another node')
  t.equal(await tokenCheck(n1.url, token), 400, 'tokens of the old key still verify')
})
