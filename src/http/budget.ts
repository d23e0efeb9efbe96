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

/**
 * A budget with its gauges registered: create one per process and hand it to
 * every HttpServer. `open`: the budget of bytes no route's check vouched for
 * (HTTP_OPEN_BODY_BUFFER_BYTES), gauged apart.
 */
export function bodyBudget (limit: number, registry: Registry, open = false): BodyBudget {
  const budget = new BodyBudget(limit)
  const [prefix, setting, what] = open
    ? ['gateway_http_open_body_buffer', 'HTTP_OPEN_BODY_BUFFER_BYTES', 'request body bytes no route\'s check vouched for (logins, bodies waiting for their token check)']
    : ['gateway_http_body_buffer', 'HTTP_BODY_BUFFER_BYTES', 'JSON request bodies being collected']
  new Gauge({ name: `${prefix}_bytes`, help: `Memory held by ${what} (${setting} is the most)`, registers: [registry], collect () { this.set(budget.inUse) } })
  new Gauge({ name: `${prefix}_peak_bytes`, help: `The most memory ${what} held at once since start`, registers: [registry], collect () { this.set(budget.peak) } })
  return budget
}
