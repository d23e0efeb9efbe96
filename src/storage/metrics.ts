import type { S3Client } from '@aws-sdk/client-s3'
import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import { S3ObjectStore } from './s3-store.js'
import type { ObjectStore } from './types.js'

/** The store's gauges and counters on `/metrics`, read from the store when scraped. */
export function storageMetrics (store: ObjectStore, registry: Registry): void {
  const { slabs, multipart } = store
  new Gauge({ name: 'gateway_evidence_buffer_in_use_bytes', help: 'Memory held by media being stored (STORAGE_BUFFER_BYTES is the most)', registers: [registry], collect () { this.set(slabs.inUse * slabs.slabSize) } })
  new Gauge({ name: 'gateway_evidence_uploads_waiting_for_buffer', help: 'Media parts held back, their sockets paused, until buffer memory (or their client\'s share of it) frees up', registers: [registry], collect () { this.set(slabs.waiting) } })
  if (store instanceof S3ObjectStore) s3RequestMetrics(store.client, registry)
  if (multipart === undefined) return
  new Gauge({ name: 'gateway_storage_multipart_uploads_in_flight', help: 'Multipart uploads being written', registers: [registry], collect () { this.set(multipart.inFlight) } })
  new Gauge({ name: 'gateway_storage_multipart_uploads_unresolved', help: 'Recorded multipart uploads not in flight whose abort has not succeeded yet (the sweep retries them)', registers: [registry], collect () { this.set(multipart.backlog) } })
  counter(registry, 'gateway_storage_multipart_aborts_retried_total', 'Aborts of recorded multipart uploads tried again by the sweep (after a failed abort, or left by an earlier process)', () => multipart.abortsRetried)
  counter(registry, 'gateway_storage_multipart_uploads_unidentified_total', 'Recorded multipart uploads whose create was never answered: one may exist whose id is unknown, left to the bucket\'s lifecycle rule', () => multipart.unidentified)
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

/** An error's name as a label: the SDK's error names (NoSuchKey, TimeoutError...), anything else `other`. */
const ERROR_NAME = /^[A-Za-z][A-Za-z0-9]{0,63}$/

/**
 * Every S3 request the store makes, timed by operation (the SDK's command:
 * PutObjectCommand, UploadPartCommand...), retries included, and its errors
 * by operation and error name: a middleware, so nothing else need know.
 */
function s3RequestMetrics (client: S3Client, registry: Registry): void {
  const duration = new Histogram({
    name: 'gateway_s3_request_duration_seconds',
    help: 'S3 requests by operation and result (ok or error), the SDK\'s retries included',
    labelNames: ['operation', 'result'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry]
  })
  const errors = new Counter({ name: 'gateway_s3_request_errors_total', help: 'S3 requests that failed, by operation and error name', labelNames: ['operation', 'error'], registers: [registry] })
  client.middlewareStack.add((next, context) => async args => {
    const operation = String(context.commandName ?? 'unknown').replace(/Command$/, '')
    const end = duration.startTimer({ operation })
    try {
      const out = await next(args)
      end({ result: 'ok' })
      return out
    } catch (err) {
      end({ result: 'error' })
      const name = (err as Error | undefined)?.name ?? ''
      errors.inc({ operation, error: ERROR_NAME.test(name) ? name : 'other' })
      throw err
    }
  }, { step: 'initialize', name: 'gatewayMetrics' })
}
