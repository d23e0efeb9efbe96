import { request, type IncomingMessage } from 'node:http'
import { type RequestContext } from '../http/index.js'
import { GatewayError } from '../errors.js'

const FORWARDED_RESPONSE_HEADERS = ['content-type', 'cache-control', 'x-accel-buffering', 'retry-after', 'www-authenticate']

/**
 * Forwards one request to the harness and streams the answer back as it
 * comes (SSE included): a chunk the client cannot take yet pauses the
 * upstream response until uWS reports the socket writable again. A client
 * that leaves ends the upstream request.
 */
export function proxy (ctx: RequestContext, target: URL, headers: Record<string, string>, body: Buffer | undefined): Promise<undefined> {
  return new Promise((resolve, reject) => {
    const upstream = request(target, { method: ctx.method, headers: { ...headers, ...(body ? { 'content-length': String(body.length) } : {}) } }, res => {
      if (!ctx.live) { res.destroy(); resolve(undefined); return }
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
    ctx.onAbort(() => upstream.destroy())
    upstream.on('error', err => {
      if (ctx.live) reject(new GatewayError('bad_gateway', 'harness unreachable', { cause: err }))
      else resolve(undefined)
    })
    upstream.end(body)
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
