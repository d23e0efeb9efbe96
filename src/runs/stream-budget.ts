import { refusal } from '../errors.js'

/**
 * Run streams and watch feeds a process serves at once, in all and per
 * tenant: each holds a socket (and, through the front door or from another
 * node, one more) for as long as its client keeps it, so one tenant opening
 * thousands must not take the descriptors every other tenant needs.
 */
export class StreamBudget {
  private total = 0
  private readonly byTenant = new Map<string, number>()

  constructor (private readonly max: number, private readonly perTenant: number) {}

  /** A place for one more stream of `tenant`, or 429 `too_many_streams`; call the result once the stream ends. */
  take (tenant: string): () => void {
    const mine = this.byTenant.get(tenant) ?? 0
    if (this.total >= this.max || mine >= this.perTenant) {
      const which = mine >= this.perTenant ? `${this.perTenant} for this tenant` : `${this.max} in this process`
      throw refusal('too_many_streams', { headers: { 'retry-after': '5' }, details: { detail: `at most ${which} open at once` } })
    }
    this.total++
    this.byTenant.set(tenant, mine + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      this.total--
      const left = (this.byTenant.get(tenant) ?? 1) - 1
      if (left > 0) this.byTenant.set(tenant, left)
      else this.byTenant.delete(tenant)
    }
  }
}
