import { refusal } from '../errors.js'
import type { Reply } from '../http/index.js'
import { ByteRates } from './byte-rates.js'

/** How many seconds of its read rate a tenant may spend at once. */
export const READ_BURST_S = 2

/**
 * The bytes of large answers (a run with its events, up to about 1 MiB a
 * page; a page of the run list; a sync start's record) served to a tenant a
 * second. Each is built and serialised on the event loop, so a tenant asking
 * for thousands at once would otherwise hold every other tenant's requests
 * behind its own. A read while the tenant's rate is spent is 429
 * `too_many_reads`, with the wait in `Retry-After`; a sync start is refused
 * before its run starts, and a cancel's answer is counted but never refused.
 */
export class ReadRate {
  private readonly rates: ByteRates

  constructor (bytesPerS: number, now?: () => number) {
    this.rates = new ByteRates(bytesPerS, READ_BURST_S, now)
  }

  /** Refuses a read of `tenant` while its rate is spent. */
  check (tenant: string): void {
    const wait = this.rates.waitMs(tenant)
    if (wait > 0) {
      throw refusal('too_many_reads', {
        headers: { 'retry-after': String(Math.ceil(wait / 1000)) },
        details: { detail: `the tenant was served more than ${this.rates.bytesPerS} bytes a second` }
      })
    }
  }

  /** `json` (JSON text) served as `status`, counted against `tenant`'s rate. */
  served (tenant: string, status: number, json: string): Reply {
    this.rates.spend(tenant, Buffer.byteLength(json))
    return { status, body: json, headers: { 'content-type': 'application/json' } }
  }
}
