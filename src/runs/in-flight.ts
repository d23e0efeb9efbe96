import { refusal, type GatewayError } from '../errors.js'

/** Runs queued or running in this process: past any bound a start is refused with 503 (`runs_in_flight_limit`). */
export interface RunLimits {
  total: number
  perTenant: number
  /** Per client address, for starts that name one (the open mode, where the tenant is only a header). */
  perAddress?: number
  /** Longest life of a run: past it the run fails with `run_timeout` (a run holds its place in the bounds while it lives). */
  lifetimeMs?: number
}

export const NO_LIMITS: RunLimits = { total: Infinity, perTenant: Infinity }

/**
 * The runs in flight of each tenant and client address: a run can last
 * hours (echo's 1000 steps a minute apart), so no one tenant or address
 * may hold all of a process's places.
 */
export class InFlightCounts {
  private readonly byTenant = new Map<string, number>()
  private readonly byAddress = new Map<string, number>()

  constructor (private readonly limits: RunLimits) {}

  /** Why one more run of `tenant` (from `address`) is refused while `total` are in flight, or undefined. */
  refusal (total: number, tenant: string, address?: string): GatewayError | undefined {
    const { perTenant, perAddress = Infinity } = this.limits
    const mine = this.byTenant.get(tenant) ?? 0
    const theirs = address === undefined ? 0 : this.byAddress.get(address) ?? 0
    if (total < this.limits.total && mine < perTenant && theirs < perAddress) return undefined
    const which = mine >= perTenant ? `${perTenant} for this tenant` : theirs >= perAddress ? `${perAddress} for this client address` : `${this.limits.total} in this process`
    return refusal('runs_in_flight_limit', { headers: { 'retry-after': '1' }, details: { detail: `at most ${which} queued or running` } })
  }

  add (tenant: string, address: string | undefined): void {
    bump(this.byTenant, tenant, 1)
    if (address !== undefined) bump(this.byAddress, address, 1)
  }

  remove (tenant: string, address: string | undefined): void {
    bump(this.byTenant, tenant, -1)
    if (address !== undefined) bump(this.byAddress, address, -1)
  }
}

function bump (counts: Map<string, number>, key: string, by: number): void {
  const n = (counts.get(key) ?? 0) + by
  if (n > 0) counts.set(key, n)
  else counts.delete(key)
}
