import { Gauge, type Registry } from 'prom-client'

/**
 * The memory every JSON body being collected may hold together, shared by
 * all servers of the process. A body takes its share as its bytes arrive (or
 * all of its Content-Length at once, once its route let it in) and gives it
 * back when its request ends; a body that cannot take its share is refused
 * with 503 instead of waiting, so a crowd of large bodies cannot grow the
 * process past the budget.
 */
export class BodyBudget {
  private used = 0
  private highest = 0

  constructor (readonly limit: number) {}

  get inUse (): number {
    return this.used
  }

  /** The most ever held at once. */
  get peak (): number {
    return this.highest
  }

  take (bytes: number): boolean {
    if (this.used + bytes > this.limit) return false
    this.used += bytes
    if (this.used > this.highest) this.highest = this.used
    return true
  }

  give (bytes: number): void {
    this.used -= bytes
  }
}

/** A budget with its gauges registered: create one per process and hand it to every HttpServer. */
export function bodyBudget (limit: number, registry: Registry): BodyBudget {
  const budget = new BodyBudget(limit)
  new Gauge({ name: 'gateway_http_body_buffer_bytes', help: 'Memory held by JSON request bodies being collected (HTTP_BODY_BUFFER_BYTES is the most)', registers: [registry], collect () { this.set(budget.inUse) } })
  new Gauge({ name: 'gateway_http_body_buffer_peak_bytes', help: 'The most memory JSON request bodies held at once since start', registers: [registry], collect () { this.set(budget.peak) } })
  return budget
}
