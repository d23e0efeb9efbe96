import type { Registry } from 'prom-client'

/** The figures of one registry, as prom-client's aggregation takes them. */
export type Figures = Awaited<ReturnType<Registry['getMetricsAsJSON']>>

/** Worker → supervisor, over the cluster IPC channel. */
export type ToSupervisor =
  | { gateway: 'listening' }
  /** A /metrics request arrived: answer with every worker's figures. */
  | { gateway: 'metrics', id: number }
  | { gateway: 'figures', id: number, figures: Figures }
  /** Something the other workers should hear at once (`peerSignal`), relayed to each of them. */
  | { gateway: 'signal', name: string }

/** Supervisor → worker. */
export type ToWorker =
  | { gateway: 'collect', id: number }
  | { gateway: 'metrics', id: number, text?: string, error?: string }
  | { gateway: 'signal', name: string }

/**
 * Series a sum across workers would make meaningless (a start time, a peak,
 * the event-loop lag of the busiest worker averaged away): each keeps a
 * `worker` label instead. Everything else is summed, except what prom-client
 * itself aggregates otherwise and the gauges that read state the workers
 * share (the evidence outbox: `max`).
 */
export function perWorker (name: string): boolean {
  return name.startsWith('nodejs_eventloop_lag') || name === 'process_start_time_seconds' || name.endsWith('_peak_bytes')
}
