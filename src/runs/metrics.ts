import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import { LIFECYCLE_EVENT } from './catalogue.js'
import type { RunHub } from './hub.js'
import type { EventSink, RunManager } from './manager.js'
import { IN_FLIGHT, type RunRecord, type RunStatus } from './types.js'
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
 * The manager's event sink is where runs are seen: `sink` wraps it.
 */
export class RunMetrics {
  /** The status of each run seen queued or started here, until it ends (or leaves this process). */
  private readonly status = new Map<string, RunStatus>()
  private readonly ended: Counter<'status'>
  private readonly duration: Histogram<'status'>

  constructor (private readonly registry: Registry) {
    this.ended = new Counter({ name: 'gateway_runs_ended_total', help: 'Runs that ended in this process, by final status', labelNames: ['status'], registers: [registry] })
    this.duration = new Histogram({
      name: 'gateway_runs_duration_seconds',
      help: 'From a run\'s creation to its end, by final status (queueing included)',
      labelNames: ['status'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600],
      registers: [registry]
    })
  }

  /** `inner`, telling these metrics of each lifecycle event first. */
  sink (inner: EventSink): EventSink {
    return {
      track: (runId, tenantId, createdAt) => { inner.track(runId, tenantId, createdAt) },
      add: (runId, event, terminal) => {
        if (event.type === LIFECYCLE_EVENT.queued) this.status.set(runId, 'queued')
        else if (event.type === LIFECYCLE_EVENT.running) this.status.set(runId, 'running')
        // Read once a run, at its end: the only event whose status is not its type's.
        else if (terminal && event.record !== undefined) this.end(runId, endOf(event.record))
        inner.add(runId, event, terminal)
      }
    }
  }

  /** The gauges read at each scrape. */
  watch ({ manager, hub, feed, relay }: { manager: RunManager, hub: RunHub, feed: RunFeed, relay: RelayFigures | undefined }): void {
    const status = this.status
    new Gauge({
      name: 'gateway_runs_in_flight',
      help: 'Runs queued or running in this process, by status',
      labelNames: ['status'],
      registers: [this.registry],
      collect () {
        const counts = new Map<RunStatus, number>()
        for (const [runId, s] of status) {
          // A run that left without an end here (its partition moved) is no longer ours to count.
          if (!manager.isActive(runId)) status.delete(runId)
          else counts.set(s, (counts.get(s) ?? 0) + 1)
        }
        for (const s of IN_FLIGHT) this.set({ status: s }, counts.get(s) ?? 0)
      }
    })
    new Gauge({
      name: 'gateway_runs_sse_subscribers',
      help: 'Open SSE streams of the harness: of one run (/runs/{id}/events) or of a tenant\'s runs (/runs/watch)',
      labelNames: ['stream'],
      registers: [this.registry],
      collect () {
        this.set({ stream: 'run' }, hub.subscriberCount)
        this.set({ stream: 'watch' }, feed.watcherCount)
      }
    })
    if (relay === undefined) return
    new Gauge({ name: 'gateway_runs_events_waiting', help: 'Run events stored but not yet acknowledged by the bus', registers: [this.registry], collect () { this.set(relay.waiting) } })
    // The relay keeps the count; the counter catches up with it at each scrape.
    let counted = 0
    new Counter({
      name: 'gateway_runs_events_dropped_total',
      help: 'Run events skipped because the bus refused them while it took others',
      registers: [this.registry],
      collect () {
        if (relay.dropped > counted) this.inc(relay.dropped - counted)
        counted = relay.dropped
      }
    })
  }

  private end (runId: string, record: Pick<RunRecord, 'status' | 'created_at' | 'ended_at'>): void {
    this.status.delete(runId)
    this.ended.inc({ status: record.status })
    const s = seconds(record.created_at, record.ended_at)
    if (s !== undefined) this.duration.observe({ status: record.status }, s)
  }
}

/**
 * A stored record's status and times, read without parsing its message and
 * result (up to 64 KiB each): the record's own keys come in a fixed order
 * before them, and a quote inside a string is escaped, so the first match is
 * the record's. Parsed whole if its text is not as written here.
 */
const TIMES_OF_RECORD = /^\{"run_id":"[^"\\]*","tenant_id":"[^"\\]*","mode":"[^"\\]*","message":"(?:[^"\\]|\\.)*","status":"([a-z_]+)","created_at":"([^"]+)","started_at":(?:null|"[^"]+"),"ended_at":(?:null|"([^"]+)")/

function endOf (json: string): Pick<RunRecord, 'status' | 'created_at' | 'ended_at'> {
  const m = TIMES_OF_RECORD.exec(json)
  if (m === null) return JSON.parse(json) as RunRecord
  return { status: m[1] as RunRecord['status'], created_at: m[2]!, ended_at: m[3] ?? null }
}
