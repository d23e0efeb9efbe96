import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import type { RunHub } from './hub.js'
import type { RunManager } from './manager.js'
import { IN_FLIGHT, type RunRecord } from './types.js'
import type { RunFeed } from './watch.js'

/** What the relay of one node exposes: run events stored and not yet on the bus, and those it gave up on. */
interface RelayFigures { readonly waiting: number, readonly dropped: number }

/** Seconds between two of a record's timestamps, or undefined when either is missing. */
function seconds (from: string | null, to: string | null): number | undefined {
  if (from === null || to === null) return undefined
  const s = (Date.parse(to) - Date.parse(from)) / 1000
  return Number.isFinite(s) && s >= 0 ? s : undefined
}

/**
 * The harness's families: runs in flight here by status, runs ended by
 * status and how long they took, SSE subscribers, and on one node the
 * relay's backlog. Every name under `gateway_runs_` (docs/operations.md).
 */
export function runMetrics (registry: Registry, parts: { manager: RunManager, hub: RunHub, feed: RunFeed, relay: RelayFigures | undefined }): void {
  const { manager, hub, feed, relay } = parts
  new Gauge({
    name: 'gateway_runs_in_flight',
    help: 'Runs queued or running in this process, by status',
    labelNames: ['status'],
    registers: [registry],
    collect () {
      const counts = manager.statusCounts()
      for (const status of IN_FLIGHT) this.set({ status }, counts.get(status) ?? 0)
    }
  })
  const ended = new Counter({ name: 'gateway_runs_ended_total', help: 'Runs that ended in this process, by final status', labelNames: ['status'], registers: [registry] })
  const duration = new Histogram({
    name: 'gateway_runs_duration_seconds',
    help: 'From a run\'s creation to its end, by final status (queueing included)',
    labelNames: ['status'],
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
    registers: [registry]
  })
  manager.ended = (record: RunRecord) => {
    ended.inc({ status: record.status })
    const s = seconds(record.created_at, record.ended_at)
    if (s !== undefined) duration.observe({ status: record.status }, s)
  }
  new Gauge({
    name: 'gateway_runs_sse_subscribers',
    help: 'Open SSE streams of the harness: of one run (/runs/{id}/events) or of a tenant\'s runs (/runs/watch)',
    labelNames: ['stream'],
    registers: [registry],
    collect () {
      this.set({ stream: 'run' }, hub.subscriberCount)
      this.set({ stream: 'watch' }, feed.watcherCount)
    }
  })
  if (relay === undefined) return
  new Gauge({ name: 'gateway_runs_events_waiting', help: 'Run events stored but not yet acknowledged by the bus', registers: [registry], collect () { this.set(relay.waiting) } })
  // The relay keeps the count; the counter catches up with it at each scrape.
  let counted = 0
  new Counter({
    name: 'gateway_runs_events_dropped_total',
    help: 'Run events skipped because the bus refused them while it took others',
    registers: [registry],
    collect () {
      if (relay.dropped > counted) this.inc(relay.dropped - counted)
      counted = relay.dropped
    }
  })
}
