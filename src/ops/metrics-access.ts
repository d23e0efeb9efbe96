import { createHash, timingSafeEqual } from 'node:crypto'
import { BlockList } from 'node:net'
import { GatewayError, unauthorized } from '../errors.js'
import type { RequestContext } from '../http/index.js'
import type { MetricsSource } from './worker-link.js'

/** Who may read `/metrics`: the holder of METRICS_TOKEN, or without one a caller on this machine. */
export interface MetricsAccess {
  token?: string | undefined
  /** AUTH_CLIENT_ADDRESS_HEADER: a request that carries it came through a proxy, from anywhere. */
  addressHeader?: string | undefined
}

const loopback = new BlockList()
loopback.addSubnet('127.0.0.0', 8, 'ipv4')
loopback.addAddress('::1', 'ipv6')

/** Whether a peer address (as uWS writes it) is this machine's: 127/8, ::1, or 127/8 mapped into IPv6. */
export function isLoopbackAddress (address: string): boolean {
  const mapped = /^(?:0{0,4}:){0,5}ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped !== null) return loopback.check(mapped[1]!, 'ipv4')
  try {
    return loopback.check(address, address.includes(':') ? 'ipv6' : 'ipv4')
  } catch {
    return false
  }
}

/** Headers a proxy adds: a request with one of them was not made on this machine, whatever its peer address. */
const PROXIED = ['forwarded', 'x-forwarded-for', 'x-real-ip']

/** Throws unless the request may read `/metrics`. */
export function metricsGate (access: MetricsAccess): (ctx: RequestContext) => void {
  const expected = access.token === undefined ? undefined : digest(access.token)
  const proxied = access.addressHeader === undefined ? PROXIED : [...PROXIED, access.addressHeader.toLowerCase()]
  return ctx => {
    if (expected !== undefined) {
      const given = /^Bearer (.+)$/i.exec(ctx.headers['authorization'] ?? '')?.[1]
      // Digests of equal length, so the comparison takes the same time whatever was sent.
      if (given === undefined || !timingSafeEqual(digest(given), expected)) throw unauthorized('metrics_token_required')
      return
    }
    if (!isLoopbackAddress(ctx.remoteAddress) || proxied.some(h => ctx.headers[h] !== undefined)) {
      throw new GatewayError('forbidden', 'metrics are served to this machine only unless METRICS_TOKEN is set')
    }
  }
}

function digest (text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/**
 * `source`, one collection at a time: callers that come while one runs share
 * its text, so a flood costs one collection after another (each about fifteen
 * `/health`), never one per request. Not kept past its collection: a reader
 * that has just made a request sees it counted (a cache of a second would
 * show an operator, or a test, figures older than its own request).
 */
export function coalescedMetrics (source: MetricsSource): MetricsSource {
  let running: Promise<string> | undefined
  return {
    contentType: source.contentType,
    text () {
      running ??= source.text().finally(() => { running = undefined })
      return running
    }
  }
}
