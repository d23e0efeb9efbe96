import t from 'tap'
import { connect } from 'node:net'
import { spawnGateway } from './helpers/child.js'
import { rawConnect, readResponse } from './helpers/http.js'
import { CLIENT, writeJson } from './helpers/gateway.js'

t.test('SIGTERM lets an in-flight request complete, refuses new connections, and exits 0', async t => {
  const dir = t.testdir()
  const clients = writeJson(dir, 'clients.json', [CLIENT])
  const gw = spawnGateway(t, ['start'], { DATA_DIR: dir, AUTH_CLIENTS_FILE: clients })
  const { port } = await gw.waitFor('gateway listening') as { port: number }

  const body = JSON.stringify({ grant_type: 'client_credentials', client_id: CLIENT.client_id, client_secret: CLIENT.client_secret, audience: 'evidence-gateway' })
  const socket = await rawConnect(port)
  // The login follows a probe in the same write: uWS parses both in one read
  // and sends the probe's answer after it, so once that answer is here the
  // login is in flight before the signal.
  socket.write(`GET /health HTTP/1.1\r\nHost: x\r\n\r\nPOST /api/v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`)
  await readResponse(socket, /"ok"\}$/)

  gw.proc.kill('SIGTERM')
  await gw.waitFor('shutting down')
  const refused = await new Promise<string>(resolve => {
    const s = connect(port, '127.0.0.1', () => { s.destroy(); resolve('connected') })
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'))
  })
  t.equal(refused, 'ECONNREFUSED', 'no new connections once shutting down')

  socket.write(body.slice(10))
  const response = await readResponse(socket, /"access_token"[^}]*\}$/)
  t.match(response, /^HTTP\/1\.1 200 OK/, 'the in-flight request still completed')
  t.match(response, /"token_type":"Bearer"/)
  socket.destroy()

  t.equal(await gw.exit, 0)
  const stopped = await gw.waitFor('stopped')
  t.equal(stopped['drained'], true)
})
