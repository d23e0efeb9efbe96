import { Counter, Gauge, type Registry } from 'prom-client'
import type { ObjectStore } from './types.js'

/** The store's gauges and counters on `/metrics`, read from the store when scraped. */
export function storageMetrics (store: ObjectStore, registry: Registry): void {
  const { slabs, multipart } = store
  new Gauge({ name: 'evidence_buffer_bytes_in_use', help: 'Memory held by media being stored (STORAGE_BUFFER_BYTES is the most)', registers: [registry], collect () { this.set(slabs.inUse * slabs.slabSize) } })
  new Gauge({ name: 'evidence_uploads_waiting_for_buffer', help: 'Media parts held back, their sockets paused, until buffer memory (or their client\'s share of it) frees up', registers: [registry], collect () { this.set(slabs.waiting) } })
  if (multipart === undefined) return
  new Gauge({ name: 'storage_multipart_uploads_in_flight', help: 'Multipart uploads being written', registers: [registry], collect () { this.set(multipart.inFlight) } })
  new Gauge({ name: 'storage_multipart_uploads_unresolved', help: 'Recorded multipart uploads not in flight whose abort has not succeeded yet (the sweep retries them)', registers: [registry], collect () { this.set(multipart.backlog) } })
  counter(registry, 'storage_multipart_aborts_retried_total', 'Aborts of recorded multipart uploads tried again by the sweep (after a failed abort, or left by an earlier process)', () => multipart.abortsRetried)
  counter(registry, 'storage_multipart_uploads_unidentified_total', 'Recorded multipart uploads whose create was never answered: one may exist whose id is unknown, left to the bucket\'s lifecycle rule', () => multipart.unidentified)
}

/** A counter that follows a running total kept by the store. */
function counter (registry: Registry, name: string, help: string, total: () => number): void {
  let counted = 0
  new Counter({
    name,
    help,
    registers: [registry],
    collect () {
      this.inc(total() - counted)
      counted = total()
    }
  })
}
