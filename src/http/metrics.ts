import { Counter, Histogram, type Registry } from 'prom-client'
import type { CutReason } from './intake.js'

interface Series { duration: { observe(v: number): void }, count: { inc(): void } }

/** The metrics of one HttpServer, named after it: requests by route and status, and the drain. */
export class ServerMetrics {
  private readonly duration: Histogram<'method' | 'route' | 'status'>
  private readonly count: Counter<'method' | 'route' | 'status'>
  private readonly drainedBytes: Counter
  private readonly drainsCut: Counter<'reason'>
  /** Children per method/route/status: prom-client hashes a label object on every call otherwise. */
  private readonly series = new Map<string, Series>()

  constructor (name: string, registry: Registry) {
    const labelNames = ['method', 'route', 'status'] as const
    this.duration = new Histogram({
      name: `${name}_http_request_duration_seconds`,
      help: `Latency of ${name} requests by route`,
      labelNames,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry]
    })
    this.count = new Counter({ name: `${name}_http_requests_total`, help: `Requests to ${name} by route and status`, labelNames, registers: [registry] })
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
    const key = `${method} ${status} ${route}`
    let series = this.series.get(key)
    if (!series) {
      const labels = { method, route, status: String(status) }
      series = { duration: this.duration.labels(labels), count: this.count.labels(labels) }
      this.series.set(key, series)
    }
    series.duration.observe(seconds)
    series.count.inc()
  }

  drained (bytes: number): void {
    this.drainedBytes.inc(bytes)
  }

  cutShort (reason: CutReason): void {
    this.drainsCut.inc({ reason })
  }
}
