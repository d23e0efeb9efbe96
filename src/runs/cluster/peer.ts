import { request, type Agent } from 'node:http'
import { TENANT_ASSERTION_HEADER } from '../../auth/index.js'
import { refusal, type GatewayError } from '../../errors.js'
import { proxy, upstreamOf, type RequestContext } from '../../http/index.js'
import { TENANT_HEADER } from '../../harness-api/index.js'

/**
 * Headers a member sets on what it forwards to another, read only on the
 * peer listener (a client's copy on the public port means nothing):
 * a forwarded request is never forwarded again.
 */
export const PEER = {
  /** `GET /runs/{id}`: wait up to this many ms for the run's end (and for the run, if its start is still on its way). */
  wait: 'x-gateway-wait-ms',
  /** `GET /runs`: only the runs of the partitions the member serves. */
  scope: 'x-gateway-scope'
} as const

/** Longest wait for an owner's answer to begin. */
const ANSWER_MS = 5_000
/** A JSON answer read whole from an owner (a page of a list) is refused past this. */
const MAX_JSON_BYTES = 64 * 1024 * 1024
const PASSED = ['authorization', TENANT_HEADER, TENANT_ASSERTION_HEADER, 'last-event-id', 'x-request-id', 'accept']

export function ownerUnavailable (why: string): GatewayError {
  return refusal('run_owner_unavailable', { headers: { 'retry-after': '1' }, details: { detail: why } })
}

/** What of the caller's request the owner needs to check it again itself: its token, its tenant, where to resume. */
export function passedHeaders (ctx: RequestContext, extra: Record<string, string> = {}): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const name of PASSED) {
    const value = ctx.headers[name]
    if (value !== undefined) headers[name] = value
  }
  return { ...headers, ...extra }
}

/** Streams the owner's answer to the caller as it comes (an SSE stream included). */
export async function forward (ctx: RequestContext, url: string, agent: Agent, req: { path: string, method?: 'GET' | 'POST', headers: Record<string, string>, body?: Buffer }): Promise<undefined> {
  try {
    return await proxy(ctx, upstreamOf(url, { agent, answerTimeoutMs: ANSWER_MS, name: 'run owner' }), { path: req.path, method: req.method, headers: req.headers, body: req.body })
  } catch (err) {
    throw ownerUnavailable(`the owner of the run at ${url} did not answer: ${(err as Error).cause instanceof Error ? ((err as Error).cause as Error).message : (err as Error).message}`)
  }
}

/** An owner's JSON answer, read whole. */
export function peerJson (url: string, agent: Agent, path: string, headers: Record<string, string>): Promise<{ status: number, body: unknown }> {
  const target = new URL(path, url)
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => outgoing.destroy(new Error(`no answer within ${ANSWER_MS} ms`)), ANSWER_MS)
    const outgoing = request({ hostname: target.hostname, port: target.port, path: `${target.pathname}${target.search}`, method: 'GET', headers, agent }, res => {
      clearTimeout(timer)
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > MAX_JSON_BYTES) res.destroy(new Error(`answer over ${MAX_JSON_BYTES} bytes`))
        else chunks.push(chunk)
      })
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 502, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) })
        } catch (err) {
          reject(err)
        }
      })
      res.on('error', reject)
    })
    outgoing.on('error', err => { clearTimeout(timer); reject(ownerUnavailable(`the member at ${url} did not answer: ${err.message}`)) })
    outgoing.end()
  })
}
