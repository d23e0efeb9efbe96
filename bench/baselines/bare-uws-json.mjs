// Baseline `bare-uws-json` of the `telemetry` scenario: the uWebSockets.js
// build the gateway uses, reading a POST body (onData), JSON.parse, and
// answering 200 with the gateway's success body. No authentication, no
// validation, no publish: the floor of "a JSON POST on uWS in Node".
// Listens on HOST:PORT (PORT 0: the kernel picks), prints
// {"msg":"bare-uws-json listening","port":N} on stdout, exits 0 on SIGTERM/SIGINT.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const uWS = require('uWebSockets.js')

// The package silently falls back to a slow node:http emulation when the
// native binary does not load; only the native module has getParts.
if (typeof uWS.getParts !== 'function') {
  process.stderr.write('bare-uws-json: uWebSockets.js loaded its Node.js emulation, not the native binary; refusing to start\n')
  process.exit(1)
}

const host = process.env.HOST ?? '127.0.0.1'
const port = Number(process.env.PORT ?? 0)
const SUCCESS = JSON.stringify({ status: 'success', message: 'message sent successfully' })
const BAD = JSON.stringify({ status: 'error', message: 'body is not JSON' })
let listenSocket

uWS.App()
  .post('/v1/asset/track', res => {
    let aborted = false
    let chunks = []
    res.onAborted(() => { aborted = true })
    res.onData((chunk, isLast) => {
      // uWS reuses the chunk's memory after this call returns: copy it.
      chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)))
      if (!isLast || aborted) return
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
      chunks = []
      let ok = true
      try { JSON.parse(body.toString('utf8')) } catch { ok = false }
      // Inside uWS's own callback: the writes are corked already.
      res.writeStatus(ok ? '200 OK' : '400 Bad Request').writeHeader('content-type', 'application/json').end(ok ? SUCCESS : BAD)
    })
  })
  .listen(host, port, socket => {
    if (!socket) {
      process.stderr.write(`bare-uws-json: cannot listen on ${host}:${port}\n`)
      process.exit(1)
    }
    listenSocket = socket
    process.stdout.write(JSON.stringify({ msg: 'bare-uws-json listening', port: uWS.us_socket_local_port(socket), pid: process.pid }) + '\n')
  })

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    if (listenSocket) uWS.us_listen_socket_close(listenSocket)
    process.exit(0) // kept-alive client sockets would otherwise hold the loop open
  })
}
