import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

interface Tap { teardown(fn: () => unknown): void }

export interface StandInOptions {
  /**
   * Which conditions of PutObject it honours: both (as S3 and MinIO do),
   * `If-None-Match` only, or none (as stores that predate them: the write
   * happens whatever the header says).
   */
  conditions?: 'both' | 'if-none-match' | 'none'
  /** Its answer to reading or writing a bucket's lifecycle: done, or 403 (credentials without the permission). */
  lifecycle?: 'allowed' | 'denied'
}

export interface StandIn {
  endpoint: string
  /** What it holds: objects by `bucket/key`, lifecycle configurations (the XML written) by bucket. */
  objects: Map<string, Buffer>
  lifecycles: Map<string, string>
  /** Every request but HeadBucket and CreateBucket, as `METHOD /path?query`. */
  requests: string[]
}

/**
 * A tiny S3 endpoint of the test's own, for what MinIO does not do: ignore
 * the conditions of a conditional write, or accept a lifecycle rule. It
 * speaks just enough of the protocol for HeadBucket, CreateBucket, Put, Get,
 * Head and DeleteObject, and Get/PutBucketLifecycleConfiguration, path style,
 * without checking signatures.
 */
export async function startStandIn (t: Tap, options: StandInOptions = {}): Promise<StandIn> {
  const conditions = options.conditions ?? 'both'
  const state: StandIn = { endpoint: '', objects: new Map(), lifecycles: new Map(), requests: [] }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => answer(req, Buffer.concat(chunks), res))
  })
  const answer = (req: IncomingMessage, body: Buffer, res: ServerResponse): void => {
    const url = new URL(req.url!, 'http://standin')
    const [bucket, ...rest] = url.pathname.slice(1).split('/')
    const objectKey = decodeURIComponent(rest.join('/'))
    const key = `${bucket}/${objectKey}`
    if (objectKey !== '' || url.search !== '') state.requests.push(`${req.method} ${req.url}`)
    if (url.searchParams.has('lifecycle')) {
      if (options.lifecycle === 'denied') return error(res, 403, 'AccessDenied')
      if (req.method === 'PUT') {
        state.lifecycles.set(bucket!, body.toString())
        return void res.writeHead(200).end()
      }
      const xml = state.lifecycles.get(bucket!)
      return xml === undefined ? error(res, 404, 'NoSuchLifecycleConfiguration') : void res.writeHead(200, { 'content-type': 'application/xml' }).end(xml)
    }
    // HeadBucket and CreateBucket: every bucket exists.
    if (objectKey === '') return void res.writeHead(200).end()
    const held = state.objects.get(key)
    const etag = held && `"${createHash('md5').update(held).digest('hex')}"`
    switch (req.method) {
      case 'PUT': {
        if (conditions !== 'none' && req.headers['if-none-match'] === '*' && held) return error(res, 412, 'PreconditionFailed')
        if (conditions === 'both' && req.headers['if-match'] !== undefined && req.headers['if-match'] !== etag) return error(res, 412, 'PreconditionFailed')
        state.objects.set(key, body)
        return void res.writeHead(200, { etag: `"${createHash('md5').update(body).digest('hex')}"` }).end()
      }
      case 'GET':
      case 'HEAD':
        if (!held) return error(res, 404, 'NoSuchKey')
        return void res.writeHead(200, { etag: etag!, 'content-length': held.length, 'last-modified': new Date().toUTCString() }).end(req.method === 'GET' ? held : undefined)
      case 'DELETE':
        state.objects.delete(key)
        return void res.writeHead(204).end()
      default:
        return error(res, 405, 'MethodNotAllowed')
    }
  }
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise(resolve => { server.closeAllConnections(); server.close(resolve) }))
  state.endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return state
}

function error (res: ServerResponse, status: number, code: string): void {
  res.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code}</Message></Error>`)
}
