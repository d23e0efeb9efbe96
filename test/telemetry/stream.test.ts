import t from 'tap'
import { request as httpRequest } from 'node:http'
import { WebSocket } from 'undici'
import { startTestGateway, login, NO_SCOPE_CLIENT, CLIENT, writeJson } from '../helpers/gateway.js'
import { startIdp, IDP_ISSUER } from '../helpers/jwks.js'
import { spawnGateway, tailBus } from '../helpers/child.js'

const record = (assetId: string, extra: object = {}) => ({ asset_id: assetId, timestamp: '2026-11-22T08:00:00Z', gps: { latitude: 52.5, longitude: 13.4 }, ...extra })
const PATH = '/v1/asset/track:stream'

/** A client of the stream: every frame the server sent, and a wait for the next ones that match. */
class Client {
  readonly frames: any[] = []
  closed: { code: number, reason: string } | undefined
  private waiters: Array<() => void> = []
  constructor (readonly ws: WebSocket) {
    ws.addEventListener('message', e => { this.frames.push(JSON.parse(String(e.data))); this.wake() })
    ws.addEventListener('close', e => { this.closed = { code: e.code, reason: e.reason }; this.wake() })
  }

  send (message: unknown): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message))
  }

  /** Resolves once `done(frames)` holds (checked on every frame and at close). */
  until (done: (c: Client) => boolean): Promise<void> {
    if (done(this)) return Promise.resolve()
    return new Promise(resolve => {
      const check = (): void => { if (done(this)) resolve(); else this.waiters.push(check) }
      this.waiters.push(check)
    })
  }

  /** The sequence numbers acknowledged so far. */
  get acked (): number[] {
    return this.frames.filter(f => f.status === 'accepted').flatMap(f => Array.from({ length: f.to - f.from + 1 }, (_, i) => f.from + i))
  }

  private wake (): void {
    const waiting = this.waiters
    this.waiters = []
    for (const w of waiting) w()
  }
}

async function connect (url: string, token: string, streamId = 'stream-1'): Promise<Client> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}${PATH}`, { headers: { authorization: `Bearer ${token}`, 'x-stream-id': streamId } } as any)
  const client = new Client(ws)
  await new Promise<void>((resolve, reject) => {
    ws.addEventListener('open', () => resolve())
    ws.addEventListener('error', () => reject(new Error('upgrade refused')))
  })
  await client.until(c => c.frames.length > 0)
  return client
}

/** An upgrade the server refuses: its status, headers and body. */
function refusedUpgrade (url: string, headers: Record<string, string>, path = PATH): Promise<{ status: number, headers: Record<string, unknown>, body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', ...headers } })
    req.on('upgrade', (_res, socket) => { socket.destroy(); reject(new Error('upgraded')) })
    req.on('response', res => {
      let text = ''
      res.on('data', c => { text += c })
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('records are acknowledged once the bus has them, and published as one-record requests publish them', async t => {
  const gw = await startTestGateway(t)
  const token = await login(gw.url)
  const client = await connect(gw.url, token, 'truck-fleet-7')
  t.match(client.frames[0], { status: 'ready', stream_id: 'truck-fleet-7', window: { records: 1000, bytes: 1048576 } })
  t.match(client.frames[0].expires_at, /^\d{4}-\d{2}-\d{2}T/)
  client.send({ seq: 1, record: record('a') })
  client.send(` { "records" : [${JSON.stringify(record('b'))}, ${JSON.stringify(record('c'))}], "seq": 2 } `)
  await client.until(c => c.acked.length === 3)
  t.same(client.acked, [1, 2, 3])
  const messages = await tailBus(gw.dataDir, 'asset.telemetry.v1')
  t.same(messages.map(m => m.key), ['a', 'b', 'c'])
  t.same(messages.map(m => m.headers), [1, 2, 3].map(seq => ({ 'x-request-id': `truck-fleet-7#${seq}`, 'client-id': CLIENT.client_id, schema: 'asset-tracking-data@1', 'message-id': `${CLIENT.client_id}/truck-fleet-7#${seq}` })))
  t.same({ ...(messages[1]!.value as any), received_at: undefined }, { ...record('b'), client_id: CLIENT.client_id, request_id: 'truck-fleet-7#2', received_at: undefined })
  client.ws.close()
  await client.until(c => c.closed !== undefined)
})

t.test('an invalid record is refused with the errors a one-record request gets; the others are acknowledged', async t => {
  const gw = await startTestGateway(t)
  const token = await login(gw.url)
  const client = await connect(gw.url, token)
  const bad = { asset_id: ' ', timestamp: 'now', gps: { latitude: 91 } }
  const alone = await fetch(`${gw.url}/v1/asset/track`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-request-id': 'r', 'x-request-timestamp': '1' }, body: JSON.stringify(bad) })
  client.send({ seq: 10, records: [record('a'), bad, record('c')] })
  client.send('{"seq": 13, "record": [1]}')
  client.send('{"seq": 14}')
  client.send('not json')
  client.send({ seq: -1, record: record('x'), extra: 1 })
  await client.until(c => c.acked.length === 2 && c.frames.filter(f => f.status !== 'ready' && f.status !== 'accepted').length === 5)
  t.same(client.acked, [10, 12])
  t.same(client.frames.find(f => f.seq === 11), { seq: 11, ...await alone.json() as object })
  t.same(client.frames.find(f => f.seq === 13), { seq: 13, status: 'validation_error', message: 'Validation failed', errors: { record: 'must be an object' } })
  t.same(client.frames.find(f => f.seq === 14), { seq: 14, status: 'validation_error', message: 'Validation failed', errors: { record: 'is required' } })
  t.same(client.frames.filter(f => f.seq === undefined && f.status !== 'ready' && f.status !== 'accepted'), [
    { status: 'validation_error', message: 'Validation failed', errors: { message: 'must be a JSON object {"seq": <integer>, "record": {...}} or {"seq": <integer>, "records": [...]}' } },
    { status: 'validation_error', message: 'Validation failed', errors: { seq: 'must be an integer from 0 to 2^53 - 1', extra: 'is not a member of a stream message' } }
  ])
  t.same((await tailBus(gw.dataDir, 'asset.telemetry.v1')).map(m => m.key), ['a', 'c'])
  client.ws.close()
  await client.until(c => c.closed !== undefined)
})

t.test('the upgrade is refused with the route\'s statuses and bodies: token, scope, stream id, streams per client', async t => {
  const gw = await startTestGateway(t, { TELEMETRY_STREAM_PER_CLIENT: '1' })
  const token = await login(gw.url)
  const noToken = await refusedUpgrade(gw.url, { 'x-stream-id': 's' })
  t.equal(noToken.status, 401)
  t.match(noToken.body, { status: 'error', message: String })
  t.equal(noToken.headers['www-authenticate'], 'Bearer')
  const reader = await login(gw.url, NO_SCOPE_CLIENT)
  const noScope = await refusedUpgrade(gw.url, { authorization: `Bearer ${reader}`, 'x-stream-id': 's' })
  t.same([noScope.status, noScope.body], [403, { status: 'error', message: 'token lacks scope asset:track:write' }])
  const twice = await refusedUpgrade(gw.url, { authorization: `Bearer ${token}`, 'x-stream-id': 's' }, `${PATH}?window=1&window=2`)
  t.same([twice.status, twice.body], [400, { status: 'validation_error', message: 'window is given more than once', errors: { window: 'is given more than once' } }], 'a query parameter given twice, as on every route')
  const noId = await refusedUpgrade(gw.url, { authorization: `Bearer ${token}` })
  t.same([noId.status, noId.body], [400, { status: 'validation_error', message: 'Validation failed', errors: { xStreamId: 'is required' } }])
  const first = await connect(gw.url, token)
  const second = await refusedUpgrade(gw.url, { authorization: `Bearer ${token}`, 'x-stream-id': 's2' })
  t.same([second.status, second.headers['retry-after'], second.body], [429, '1', { status: 'error', message: '1 streams of this client are open already' }])
  first.ws.close()
  await first.until(c => c.closed !== undefined)
  const again = await connect(gw.url, token)
  t.pass('a stream closed frees its place')
  again.ws.close()
  await again.until(c => c.closed !== undefined)
})

t.test('the window: records past its count or bytes are refused (overloaded) until acknowledgments free it; a message past its bytes closes the stream', async t => {
  // Records linger in the batcher, so they stay unacknowledged until the test has filled the window.
  const gw = await startTestGateway(t, { TELEMETRY_STREAM_WINDOW_RECORDS: '2', TELEMETRY_STREAM_WINDOW_BYTES: '1024', TELEMETRY_LINGER_MS: '1500' })
  const token = await login(gw.url)
  const client = await connect(gw.url, token)
  client.send({ seq: 1, records: [record('a'), record('b')] })
  client.send({ seq: 3, record: record('c') })
  await client.until(c => c.frames.some(f => f.seq === 3))
  t.same(client.frames.find(f => f.seq === 3), { seq: 3, status: 'error', message: 'Too many records unacknowledged on this stream; wait for acknowledgments', detail: `window of 2 records and 1024 bytes: 2 records and ${JSON.stringify(record('a')).length * 2} bytes unacknowledged` })
  await client.until(c => c.acked.length === 2)
  client.send({ seq: 3, record: record('c', { pad: 'x'.repeat(500) }) })
  client.send({ seq: 4, record: record('d', { pad: 'x'.repeat(500) }) })
  await client.until(c => c.frames.some(f => f.seq === 4))
  t.match(client.frames.find(f => f.seq === 4), { status: 'error', detail: /1024 bytes: 1 records and \d+ bytes unacknowledged/ }, 'the bytes are bounded too')
  await client.until(c => c.acked.length === 3)
  t.same(client.acked, [1, 2, 3])
  client.send({ seq: 5, record: record('e', { pad: 'x'.repeat(1100) }) })
  await client.until(c => c.closed !== undefined)
  t.same(client.closed, { code: 1006, reason: '' }, 'a message larger than the window: uWS drops the connection without a close frame')
  t.same((await tailBus(gw.dataDir, 'asset.telemetry.v1')).map(m => m.key), ['a', 'b', 'c'])
})

t.test('the stream closes with 4401 when its token expires, after acknowledging what it took', async t => {
  const idp = await startIdp(t)
  const gw = await startTestGateway(t, { IDP_ISSUER, IDP_JWKS_URL: idp.jwksUrl })
  // exp is in whole seconds: a token of 4 lives 3 to 4 s, time for a loaded machine to connect and send one record before it ends.
  const token = await idp.sign({ client_id: 'short-lived', scope: 'asset:track:write' }, { aud: 'evidence-gateway', expiresIn: 4 })
  const client = await connect(gw.url, token)
  client.send({ seq: 1, record: record('a') })
  await client.until(c => c.closed !== undefined)
  t.same(client.closed, { code: 4401, reason: 'token expired' })
  t.same(client.acked, [1], 'the record sent before was acknowledged first')
})

t.test('a stream whose token is checked against IDP_JWKS_URL (upgraded after an await) stays open after a stream before it closed', async t => {
  const idp = await startIdp(t)
  const outcomes: string[] = []
  // uWS's fault depends on what the memory of a socket closed before holds; twenty gateways, each upgrading its first
  // such stream after fetching the key set, met it in most runs of the old code (up to one stream in three in others).
  for (let round = 0; round < 20; round++) {
    const gw = await startTestGateway(t, { IDP_ISSUER, IDP_JWKS_URL: idp.jwksUrl })
    const tokens = { own: () => login(gw.url), idp: () => idp.sign({ client_id: 'camera-7', scope: 'asset:track:write' }, { aud: 'evidence-gateway', expiresIn: 600 }) }
    for (const id of ['own', 'idp'] as const) {
      const client = await connect(gw.url, await tokens[id](), id)
      client.send({ seq: 1, record: record(id) })
      await client.until(c => c.acked.length === 1 || c.closed !== undefined)
      outcomes.push(client.closed === undefined ? 'acknowledged' : `closed ${client.closed.code}`)
      client.ws.close()
      await client.until(c => c.closed !== undefined)
    }
  }
  t.same(outcomes, Array(40).fill('acknowledged'), 'every stream took its record; none was dropped after its upgrade')
})

t.test('shutdown: streams close with 1001 once their records are acknowledged, and the gateway stops drained', async t => {
  const dir = t.testdir()
  const gw = spawnGateway(t, ['start'], { DATA_DIR: dir, AUTH_CLIENTS_FILE: writeJson(dir, 'clients.json', [CLIENT]), GATEWAY_INFRA_RUN: dir })
  const { port } = await gw.waitFor('gateway listening') as { port: number }
  const url = `http://127.0.0.1:${port}`
  const client = await connect(url, await login(url))
  client.send({ seq: 1, record: record('a') })
  await client.until(c => c.acked.length === 1)
  gw.proc.kill('SIGTERM')
  await client.until(c => c.closed !== undefined)
  t.same(client.closed, { code: 1001, reason: 'server shutting down' })
  t.equal((await gw.waitFor('stopped'))['drained'], true)
})
