import t from 'tap'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { decodeProtectedHeader } from 'jose'
import '../helpers/no-keepalive.js'
import { addClient, startCluster } from '../helpers/cluster.js'
import { fakeClock } from '../helpers/faketime.js'
import { login } from '../helpers/gateway.js'
import { eventually } from '../helpers/http.js'
import { sharedInfra } from '../helpers/infra.js'
import { multipartBody, postEvidence } from '../helpers/multipart.js'
import { s3Client } from '../helpers/s3.js'

const ROTATION_S = 60

const kidsServed = async (url: string): Promise<string[]> => ((await (await fetch(`${url}/.well-known/jwks.json`)).json()) as { keys: Array<{ kid: string }> }).keys.map(k => k.kid)

/** 400 when node `url` accepts `token` (a body without an envelope: nothing is claimed or stored), 401 when it does not. */
async function tokenCheck (url: string, token: string): Promise<number> {
  return (await postEvidence(url, token, multipartBody([{ name: 'other', contentType: 'text/plain', data: 'x' }]))).status
}

interface Issued { node: number, kid: string, token: string, servedByBoth: boolean, checks: number[] }

t.test('two nodes whose clocks are 6 minutes apart: every token either issues verifies on both, through a key rotation', async t => {
  const infra = sharedInfra(t)
  if (!infra) return
  const fast = fakeClock(t, '+6m')
  if (!fast) return
  const cluster = await startCluster(t, infra, 2, { AUTH_KEY_ROTATION_S: String(ROTATION_S), AUTH_KEY_PUBLISH_LEAD_S: '15', AUTH_TOKEN_TTL_S: '60' }, { isolated: true, nodeEnv: [{}, fast] })
  const nodes = cluster.nodes
  const ahead = Date.parse(String((await nodes[1]!.child.waitFor('gateway listening'))['time'])) - Date.now()
  t.ok(ahead > 5 * 60_000 && ahead < 7 * 60_000, `node 2's clock is 6 minutes ahead (${Math.round(ahead / 1000)} s)`)

  const client = await addClient(cluster, 'cam-skew', ['stream:write'])
  const [first] = await kidsServed(nodes[0]!.url)
  const issued: Issued[] = []
  // A round: what both nodes serve, then a token from each, checked on both.
  const round = async (): Promise<Issued[]> => {
    const sets = await Promise.all(nodes.map(n => kidsServed(n.url)))
    for (const [i, node] of nodes.entries()) {
      const token = await login(node.url, client)
      const kid = decodeProtectedHeader(token).kid!
      const checks = await Promise.all(nodes.map(n => tokenCheck(n.url, token)))
      issued.push({ node: i + 1, kid, token, servedByBoth: sets.every(set => set.includes(kid)), checks })
    }
    return issued
  }
  await eventually(round, all => nodes.every((_, i) => all.some(x => x.node === i + 1 && x.kid !== first)), 180_000, 1000)

  t.ok(issued.some(x => x.node === 2 && x.kid === first), 'node 2 signed with the first key before the rotation')
  t.same(issued.filter(x => x.checks.some(status => status !== 400)).map(x => ({ node: x.node, kid: x.kid, checks: x.checks })), [], `all ${issued.length} tokens, of both nodes and both keys, verified on both nodes`)
  t.same(issued.filter(x => !x.servedByBoth).map(x => ({ node: x.node, kid: x.kid })), [], 'no token was signed by a key that both nodes did not already serve')
  for (const node of [1, 2]) {
    const lastOld = issued.filter(x => x.node === node && x.kid === first).at(-1)!
    t.same(await Promise.all(nodes.map(n => tokenCheck(n.url, lastOld.token))), [400, 400], `node ${node}'s last token of the first key still verifies on both once the next key signs`)
  }

  const listed = await s3Client(infra).send(new ListObjectsV2Command({ Bucket: cluster.bucket, Prefix: '_gateway/auth/keys/' }))
  const keys = (listed.Contents ?? []).map(o => ({ key: o.Key!, at: o.LastModified!.getTime() }))
  t.same(keys.map(k => k.key), ['_gateway/auth/keys/000000000001.json', '_gateway/auth/keys/000000000002.json'], 'one rotation, and the first key not removed')
  t.ok(keys[1]!.at - keys[0]!.at >= ROTATION_S * 1000 - 1000, `the next key was written ${ROTATION_S} s after the first on S3's clock, not earlier (${(keys[1]!.at - keys[0]!.at) / 1000} s)`)
  const served = await Promise.all(nodes.map(n => kidsServed(n.url)))
  t.same(served[1], served[0], 'both nodes serve the same keys')
  t.ok(served[0]!.includes(first!), 'the first key among them')
})
