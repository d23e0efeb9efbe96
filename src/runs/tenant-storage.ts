import { refusal, type GatewayError } from '../errors.js'
import { ByteRates } from './byte-rates.js'

/** How many seconds of its write rate a tenant may spend at once before its starts wait. */
export const WRITE_BURST_S = 8
/** A tenant over its stored bytes waits for retention: asked again after this. */
const STORED_RETRY_S = 60

export interface TenantStorageLimits {
  /** HARNESS_TENANT_STORED_BYTES: run events a tenant may hold in this process's store, ended runs and runs in flight together. */
  storedBytes: number
  /** HARNESS_TENANT_WRITE_BYTES_PER_S: the rate a tenant's runs may write at, over WRITE_BURST_S. */
  writeBytesPerS: number
}

/**
 * The disk one tenant's runs may take. A start is refused (429
 * `run_storage_limit`) while the tenant holds its quota of stored event
 * bytes, or has written faster than its rate; a run in flight that finds
 * the quota held fails with that code, and one that finds the rate spent
 * waits before its next step. So a tenant stores at most its quota and one
 * step per run in flight, and writes at its rate past its burst.
 */
export class TenantStorage {
  private readonly inFlight = new Map<string, number>()
  private readonly rates: ByteRates

  constructor (
    private readonly limits: TenantStorageLimits,
    /** Bytes of the tenant's ended runs in the store. */
    private readonly stored: (tenant: string) => number,
    // A duration, on a clock that never steps.
    now?: () => number
  ) {
    this.rates = new ByteRates(limits.writeBytesPerS, WRITE_BURST_S, now)
  }

  /** An event of `bytes` of a run in flight of `tenant` was written. */
  written (tenant: string, bytes: number): void {
    this.inFlight.set(tenant, (this.inFlight.get(tenant) ?? 0) + bytes)
    this.rates.spend(tenant, bytes)
  }

  /** A run of `tenant` that wrote `bytes` left this process: ended (its bytes are the store's now) or given up. */
  released (tenant: string, bytes: number): void {
    const left = (this.inFlight.get(tenant) ?? 0) - bytes
    if (left > 0) this.inFlight.set(tenant, left)
    else this.inFlight.delete(tenant)
  }

  /** Why a start of `tenant` would be refused now, or undefined. */
  refusal (tenant: string): GatewayError | undefined {
    const full = this.full(tenant)
    if (full !== undefined) return refusal('run_storage_limit', { headers: { 'retry-after': String(STORED_RETRY_S) }, details: { detail: full } })
    const wait = this.waitMs(tenant)
    if (wait > 0) return refusal('run_storage_limit', { headers: { 'retry-after': String(Math.ceil(wait / 1000)) }, details: { detail: `the tenant's runs wrote faster than ${this.limits.writeBytesPerS} bytes a second` } })
    return undefined
  }

  /** Why the tenant's runs may store nothing more (its quota is held), or undefined. */
  full (tenant: string): string | undefined {
    const held = this.stored(tenant) + (this.inFlight.get(tenant) ?? 0)
    if (held < this.limits.storedBytes) return undefined
    return `the tenant's runs hold ${held} bytes, at most ${this.limits.storedBytes} until retention removes ended runs`
  }

  /** How long the tenant's runs wait before they write again, to keep to its rate (0: no wait). */
  waitMs (tenant: string): number {
    return this.rates.waitMs(tenant)
  }
}
