// Baseline for the `health` scenario: the uWebSockets.js build the gateway
// uses, answering GET /health with the same body and doing nothing else.
// Listens on HOST:PORT (PORT 0: the kernel picks), prints
// {"msg":"bare-uws listening","port":N} on stdout, exits 0 on SIGTERM/SIGINT.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const uWS = require('uWebSockets.js')

// The package silently falls back to a slow node:http emulation when the
// native binary does not load; only the native module has getParts.
if (typeof uWS.getParts !== 'function') {
  process.stderr.write('bare-uws: uWebSockets.js loaded its Node.js emulation, not the native binary; refusing to start\n')
  process.exit(1)
}

const host = process.env.HOST ?? '127.0.0.1'
const port = Number(process.env.PORT ?? 0)
let listenSocket

uWS.App()
  .get('/health', res => { res.end('{"status":"ok"}') })
  .listen(host, port, socket => {
    if (!socket) {
      process.stderr.write(`bare-uws: cannot listen on ${host}:${port}\n`)
      process.exit(1)
    }
    listenSocket = socket
    process.stdout.write(JSON.stringify({ msg: 'bare-uws listening', port: uWS.us_socket_local_port(socket), pid: process.pid }) + '\n')
  })

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    if (listenSocket) uWS.us_listen_socket_close(listenSocket)
    process.exit(0) // kept-alive client sockets would otherwise hold the loop open
  })
}
