import { readFileSync } from 'node:fs'
import t from 'tap'
import { spawnGateway, tailBus } from '../helpers/child.js'
import { rawConnect, readResponse, until } from '../helpers/http.js'
import { CLIENT, login, writeJson } from '../helpers/gateway.js'

const KEEP_ALIVE_PROBE = 'GET /health HTTP/1.1\r\nHost: x\r\n\r\n'

t.test('a request that arrives while the gateway drains gets 503 shutting_down in its route\'s shape', async t => {
  const dir = t.testdir()
  const clients = writeJson(dir, 'clients.json', [CLIENT])
  // GATEWAY_INFRA_RUN: the test infra script's variable, in the environment as it is under `npm test`.
  const gw = spawnGateway(t, ['start'], { DATA_DIR: dir, AUTH_CLIENTS_FILE: clients, GATEWAY_INFRA_RUN: dir })
  const { port } = await gw.waitFor('gateway listening') as { port: number }

  // Kept-alive connections, opened (and used once) before the shutdown.
  const telemetry = await rawConnect(port)
  const evidence = await rawConnect(port)
  for (const socket of [telemetry, evidence]) {
    socket.write(KEEP_ALIVE_PROBE)
    t.match(await readResponse(socket, /"ok"\}$/), /^HTTP\/1\.1 200 /)
  }
  // A request in flight holds the drain open. It follows a probe in the same
  // write: uWS parses both in one read and sends the probe's answer after it,
  // so once that answer is here the POST is in flight.
  const holder = await rawConnect(port)
  holder.write(KEEP_ALIVE_PROBE + 'POST /v1/asset/track HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"asset_id":')
  await readResponse(holder, /"ok"\}$/)

  gw.proc.kill('SIGTERM')
  await gw.waitFor('shutting down')
  const body = '{"asset_id":"a","timestamp":"2026-01-01T00:00:00Z"}'
  telemetry.write(`POST /v1/asset/track HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
  const onTelemetry = await readResponse(telemetry)
  t.match(onTelemetry, /^HTTP\/1\.1 503 /)
  t.same(JSON.parse(onTelemetry.slice(onTelemetry.indexOf('\r\n\r\n') + 4)), { status: 'error', message: 'server is shutting down', detail: 'shutting_down' }, 'the telemetry shape on the telemetry route')
  evidence.write('POST /v1/stream/events HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 0\r\n\r\n')
  const onEvidence = await readResponse(evidence)
  t.match(onEvidence, /^HTTP\/1\.1 503 /)
  t.same(JSON.parse(onEvidence.slice(onEvidence.indexOf('\r\n\r\n') + 4)), { status: 'error', code: 'shutting_down', details: { request: 'server is shutting down' } }, 'the evidence shape on the evidence route')

  holder.destroy()
  t.equal(await gw.exit, 0)
})

t.test('records of clients that left while they were queued do not hold a shutdown open', async t => {
  const dir = t.testdir()
  const clients = writeJson(dir, 'clients.json', [CLIENT])
  // A long linger keeps each record queued well after its client has gone.
  const gw = spawnGateway(t, ['start'], { DATA_DIR: dir, AUTH_CLIENTS_FILE: clients, GATEWAY_INFRA_RUN: dir, TELEMETRY_LINGER_MS: '300', SHUTDOWN_TIMEOUT_MS: '3000' })
  const { port } = await gw.waitFor('gateway listening') as { port: number }
  const token = await login(`http://127.0.0.1:${port}`)
  const body = readFileSync(new URL('../fixtures/asset-track.json', import.meta.url))
  for (let i = 0; i < 10; i++) {
    const socket = await rawConnect(port)
    socket.write(`POST /v1/asset/track HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Request-Id: left-${i}\r\nX-Request-Timestamp: 1763799330\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
    // Gone once the whole request is on the wire: the FIN closes it on the server.
    await new Promise<void>(resolve => socket.end(body, resolve))
  }
  await until(() => gw.lines.filter(l => l['msg'] === 'request' && l['status'] === 499).length === 10)
  gw.proc.kill('SIGTERM')
  t.equal(await gw.exit, 0)
  t.notOk(gw.lines.some(l => l['msg'] === 'shutdown deadline passed with requests in flight'), 'drained, not cut off at the deadline')
  t.same(await tailBus(dir, 'asset.telemetry.v1'), [], 'nothing was published')
})
