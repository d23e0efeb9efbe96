// What every uWebSockets.js baseline does the same way: load the native
// build the gateway uses (never its slow fallback), read a JSON body, listen
// and say so, and stop on SIGTERM/SIGINT.
import { loadUws as loadGatewayUws } from '../../dist/http/uws.js'

/** The uWS build the gateway loads on this runtime (src/http/uws.ts); exits when no native build loads. */
export function loadUws (name) {
  try {
    return loadGatewayUws(false).uws
  } catch (err) {
    process.stderr.write(`${name}: ${err.message}\n`)
    process.exit(1)
  }
}

/** Reads the whole body, then calls `done(parsed | undefined, aborted)`; nothing after an abort. */
export function readJson (res, done) {
  readBody(res, (body, aborted) => {
    let parsed
    try { parsed = JSON.parse(body.toString('utf8')) } catch {}
    done(parsed, aborted)
  })
}

/** The whole body of a request, to `done(body, aborted)`; nothing when the client left first. */
export function readBody (res, done) {
  let chunks = []
  let aborted = false
  res.onAborted(() => { aborted = true })
  res.onData((chunk, isLast) => {
    // uWS reuses the chunk's memory after this call returns: copy it.
    chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)))
    if (!isLast || aborted) return
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
    chunks = []
    done(body, () => aborted)
  })
}

/**
 * Listens on HOST:PORT (PORT 0: the kernel picks), prints
 * {"msg":"<name> listening","port":N,pid,...extra} on stdout, and on
 * SIGTERM/SIGINT closes the listener, awaits `beforeExit()` and exits 0
 * (kept-alive client sockets would otherwise hold the loop open).
 */
export function listen (uWS, app, name, { extra = {}, beforeExit } = {}) {
  const host = process.env.HOST ?? '127.0.0.1'
  const port = Number(process.env.PORT ?? 0)
  let listenSocket
  app.listen(host, port, socket => {
    if (!socket) {
      process.stderr.write(`${name}: cannot listen on ${host}:${port}\n`)
      process.exit(1)
    }
    listenSocket = socket
    process.stdout.write(JSON.stringify({ msg: `${name} listening`, port: uWS.us_socket_local_port(socket), ...extra, pid: process.pid }) + '\n')
  })
  for (const signal of ['SIGTERM', 'SIGINT']) {
    process.on(signal, async () => {
      if (listenSocket) uWS.us_listen_socket_close(listenSocket)
      await beforeExit?.()
      process.exit(0)
    })
  }
}
