import { request, type Agent, type IncomingMessage } from 'node:http'
import type { RequestContext } from './context.js'
import { GatewayError } from '../errors.js'

const FORWARDED_RESPONSE_HEADERS = ['content-type', 'cache-control', 'x-accel-buffering', 'retry-after', 'www-authenticate', 'content-security-policy', 'x-content-type-options', 'referrer-policy']
const JSON_TYPE = /^application\/json\b/i

/** A rewritten answer is read whole; the harness's answers that carry links are a few hundred bytes. */
const MAX_REWRITTEN_BYTES = 64 * 1024

/** Where every forwarded request goes: HARNESS_URL's host, port and base path, and nothing a caller chose. */
export interface Upstream {
  readonly hostname: string
  readonly port: number
  /** The base path, without a trailing slash ('' for none). */
  readonly base: string
  /** Connections kept for the next request (each request opens its own without one). */
  readonly agent?: Agent
  /** Longest wait for the answer to begin; past it the request fails (a stream, once begun, is not bounded). */
  readonly answerTimeoutMs?: number
  /** Names the upstream in errors. */
  readonly name?: string
}

/** HARNESS_URL as the parts requests are built from (the config checks it is http:// without credentials, query or fragment). */
export function upstreamOf (harnessUrl: string, extra: Pick<Upstream, 'agent' | 'answerTimeoutMs' | 'name'> = {}): Upstream {
  const url = new URL(harnessUrl)
  return { hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(url.port || 80), base: url.pathname.replace(/\/+$/, ''), ...extra }
}

export interface ProxyRequest {
  /** The harness path (a fronted route) and query, appended to the upstream's base path. */
  path: string
  /** The caller's method unless given. */
  method?: string | undefined
  headers: Record<string, string>
  body: Buffer | undefined
  /** Applied to a JSON answer, read whole, before it is sent; other answers stream through. */
  rewrite?: ((body: Buffer) => Buffer) | undefined
}

/**
 * Forwards one request to the upstream (the harness, or the owner of a run
 * in a cluster) and streams the answer back as it
 * comes (SSE included): a chunk the client cannot take yet pauses the
 * upstream response until uWS reports the socket writable again. A client
 * that leaves ends the upstream request. The target is built from its parts,
 * never resolved as a URL, so no path can name another host.
 */
export function proxy (ctx: RequestContext, upstream: Upstream, req: ProxyRequest): Promise<undefined> {
  return new Promise((resolve, reject) => {
    const headers = { ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) }
    const options = { hostname: upstream.hostname, port: upstream.port, path: `${upstream.base}${req.path}`, method: req.method ?? ctx.method, headers, ...(upstream.agent ? { agent: upstream.agent } : {}) }
    const name = upstream.name ?? 'harness'
    let timer: NodeJS.Timeout | undefined
    const outgoing = request(options, res => {
      clearTimeout(timer)
      if (!ctx.live) { res.destroy(); resolve(undefined); return }
      if (req.rewrite && JSON_TYPE.test(res.headers['content-type'] ?? '')) {
        readWhole(res).then(body => { ctx.send(res.statusCode ?? 502, req.rewrite!(body), pick(res)); resolve(undefined) }, reject)
        return
      }
      ctx.writeHead(res.statusCode ?? 502, pick(res))
      res.on('data', (chunk: Buffer) => {
        if (!ctx.write(chunk)) {
          res.pause()
          ctx.onWritable(() => { res.resume(); return true })
        }
      })
      res.on('end', () => { ctx.end(); resolve(undefined) })
      res.on('error', () => { ctx.end(); resolve(undefined) })
    })
    if (upstream.answerTimeoutMs !== undefined) timer = setTimeout(() => outgoing.destroy(new Error(`no answer within ${upstream.answerTimeoutMs} ms`)), upstream.answerTimeoutMs)
    ctx.onAbort(() => outgoing.destroy())
    outgoing.on('error', err => {
      clearTimeout(timer)
      if (ctx.live) reject(new GatewayError('bad_gateway', `${name} unreachable`, { cause: err }))
      else resolve(undefined)
    })
    outgoing.end(req.body)
  })
}

function readWhole (res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    res.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size <= MAX_REWRITTEN_BYTES) chunks.push(chunk)
      else {
        res.destroy()
        reject(new GatewayError('bad_gateway', `harness answer over ${MAX_REWRITTEN_BYTES} bytes where links are re-rooted`))
      }
    })
    res.on('end', () => resolve(Buffer.concat(chunks)))
    res.on('error', err => reject(new GatewayError('bad_gateway', 'harness answer cut short', { cause: err })))
  })
}

function pick (res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of FORWARDED_RESPONSE_HEADERS) {
    const v = res.headers[name]
    if (typeof v === 'string') out[name] = v
  }
  return out
}
