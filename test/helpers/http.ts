import './no-keepalive.js'
import { connect, type Socket } from 'node:net'
import pino from 'pino'
import { Registry } from 'prom-client'
import { HttpServer, UWS_BUILDS, loadUws, type HttpServerOptions, type Route } from '../../src/http/index.js'

interface Tap { teardown(fn: () => unknown): void }

/**
 * The uWS build this runtime loads: 20.57 (Node 22 and 24; Node 20 on glibc
 * 2.38 or later) or 20.30 (Node 20 on older glibc). Where they differ at the
 * edge (docs/http.md), a test says what each does.
 */
export const NEWER_UWS = loadUws(false).build === UWS_BUILDS[0]!.name

/** A bare HttpServer with the given routes on a free port. */
export async function serve (t: Tap, routes: Route[], options: Partial<Omit<HttpServerOptions, 'name' | 'logger' | 'registry' | 'uws'>> = {}): Promise<{ server: HttpServer, url: string, port: number, registry: Registry }> {
  const registry = new Registry()
  const server = new HttpServer({ name: 'test', logger: pino({ level: 'silent' }), registry, uws: loadUws(false).uws, ...options })
  for (const r of routes) server.route(r)
  const port = await server.listen('127.0.0.1', 0)
  t.teardown(() => server.close())
  return { server, url: `http://127.0.0.1:${port}`, port, registry }
}

/** A raw socket, for requests fetch cannot make: partial bodies, aborts. */
export function rawConnect (port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket))
    socket.once('error', reject)
  })
}

/** Reads from the socket until the peer closes it, or `until` matches. */
export function readResponse (socket: Socket, until?: RegExp): Promise<string> {
  return new Promise(resolve => {
    let text = ''
    const done = (): void => { socket.off('data', onData); resolve(text) }
    const onData = (d: Buffer): void => {
      text += d.toString('utf8')
      if (until?.test(text)) done()
    }
    socket.on('data', onData)
    socket.once('close', done)
  })
}

export function until (predicate: () => boolean, timeoutMs = 5000): Promise<void> {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const tick = (): void => {
      if (predicate()) return resolve()
      if (Date.now() - started > timeoutMs) return reject(new Error('condition not met in time'))
      setTimeout(tick, 5)
    }
    tick()
  })
}

export { eventually } from './settle.js'
