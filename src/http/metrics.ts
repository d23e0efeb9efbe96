import { Counter, type Registry } from 'prom-client'
import type { CutReason } from './intake.js'
import { RequestMetrics } from './request-metrics.js'

/** The metrics of one HttpServer, named after it: requests by route and status, and the drain. */
export class ServerMetrics {
  private readonly requests: RequestMetrics
  private readonly drainedBytes: Counter
  private readonly drainsCut: Counter<'reason'>

  constructor (name: string, registry: Registry) {
    this.requests = new RequestMetrics(
      { histogram: `${name}_http_request_duration_seconds`, counter: `${name}_http_requests_total` },
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      { histogram: `Latency of ${name} requests by route`, counter: `Requests to ${name} by route and status` },
      registry
    )
    this.drainedBytes = new Counter({
      name: `${name}_http_drained_bytes_total`,
      help: 'Request body bytes read and discarded so that an answer given before the end of the body reaches the client',
      registers: [registry]
    })
    this.drainsCut = new Counter({
      name: `${name}_http_drains_cut_short_total`,
      help: 'Early answers sent before the end of the body, closing the connection: the rest was over HTTP_DRAIN_MAX_BYTES (size) or late past HTTP_DRAIN_TIMEOUT_MS (time)',
      labelNames: ['reason'],
      registers: [registry]
    })
  }

  request (method: string, route: string, status: number, seconds: number): void {
    this.requests.observe(method, route, status, seconds)
  }

  drained (bytes: number): void {
    this.drainedBytes.inc(bytes)
  }

  cutShort (reason: CutReason): void {
    this.drainsCut.inc({ reason })
  }
}
