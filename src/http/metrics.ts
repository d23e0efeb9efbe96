import { Counter, type Registry } from 'prom-client'
import type { CutReason } from './intake.js'
import { RequestMetrics } from './request-metrics.js'

/** The HTTP families of a registry, shared by its servers, each series labelled with its server. */
interface HttpFamilies {
  requests: RequestMetrics
  drainedBytes: Counter<'server'>
  drainsCut: Counter<'server' | 'reason'>
}

const families = new WeakMap<Registry, HttpFamilies>()

function httpFamilies (registry: Registry): HttpFamilies {
  let f = families.get(registry)
  if (f === undefined) {
    f = {
      requests: new RequestMetrics(
        { histogram: 'gateway_http_request_duration_seconds', counter: 'gateway_http_requests_total' },
        [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
        { histogram: 'Latency of requests by server (listener), route and status', counter: 'Requests by server (listener), route and status' },
        registry
      ),
      drainedBytes: new Counter({
        name: 'gateway_http_drained_bytes_total',
        help: 'Request body bytes read and discarded so that an answer given before the end of the body reaches the client',
        labelNames: ['server'],
        registers: [registry]
      }),
      drainsCut: new Counter({
        name: 'gateway_http_drains_cut_short_total',
        help: 'Early answers sent before the end of the body, closing the connection: the rest was over HTTP_DRAIN_MAX_BYTES (size), late past HTTP_DRAIN_TIMEOUT_MS (time), or slower than HTTP_BODY_MIN_BYTES_PER_S (slow)',
        labelNames: ['server', 'reason'],
        registers: [registry]
      })
    }
    families.set(registry, f)
  }
  return f
}

/**
 * The metrics of one HttpServer: requests by route and status, and the
 * drain. One family per registry whatever the number of servers, each
 * server's series labelled `server` with its name (`gateway`, `harness`,
 * `harness_peer`), so a dashboard sums or splits them as it likes.
 */
export class ServerMetrics {
  private readonly families: HttpFamilies

  constructor (private readonly server: string, registry: Registry) {
    this.families = httpFamilies(registry)
  }

  request (method: string, route: string, status: number, seconds: number): void {
    this.families.requests.observe(this.server, method, route, status, seconds)
  }

  drained (bytes: number): void {
    this.families.drainedBytes.inc({ server: this.server }, bytes)
  }

  cutShort (reason: CutReason): void {
    this.families.drainsCut.inc({ server: this.server, reason })
  }
}
