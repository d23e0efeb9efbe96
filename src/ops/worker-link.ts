import cluster from 'node:cluster'
import type { Registry } from 'prom-client'
import type { ToSupervisor, ToWorker } from './cluster-messages.js'

/** Where `/metrics` gets its text: this process's registry, or the whole set of workers. */
export interface MetricsSource {
  readonly contentType: string
  text(): Promise<string>
}

/** How long a /metrics request waits for the supervisor's aggregate. */
const AGGREGATE_TIMEOUT_MS = 5_000

/** The worker's slot (1..WORKERS) when this process is a worker of a supervisor; undefined otherwise. */
export function workerSlot (): number | undefined {
  return cluster.isWorker ? Number(process.env['GATEWAY_WORKER_SLOT']) : undefined
}

/**
 * `/metrics` of this process. In a worker, the answer covers all workers:
 * the request goes to the supervisor, which collects every worker's figures
 * (this one's included, through the 'collect' message answered here).
 */
export function metricsSource (registry: Registry): MetricsSource {
  const local: MetricsSource = { contentType: registry.contentType, text: () => registry.metrics() }
  if (!cluster.isWorker) return local
  const waiting = new Map<number, { resolve: (text: string) => void, reject: (err: Error) => void }>()
  let nextId = 0
  process.on('message', (message: ToWorker) => {
    if (message?.gateway === 'collect') {
      registry.getMetricsAsJSON().then(figures => toSupervisor({ gateway: 'figures', id: message.id, figures }), () => undefined)
    } else if (message?.gateway === 'metrics') {
      const w = waiting.get(message.id)
      waiting.delete(message.id)
      if (message.text !== undefined) w?.resolve(message.text)
      else w?.reject(new Error(message.error ?? 'no metrics'))
    }
  })
  return {
    contentType: registry.contentType,
    text: () => new Promise((resolve, reject) => {
      const id = nextId++
      const timer = setTimeout(() => { waiting.delete(id); reject(new Error('the supervisor did not answer')) }, AGGREGATE_TIMEOUT_MS)
      waiting.set(id, { resolve: t => { clearTimeout(timer); resolve(t) }, reject: e => { clearTimeout(timer); reject(e) } })
      toSupervisor({ gateway: 'metrics', id })
    })
  }
}

/**
 * A signal between the workers sharing DATA_DIR, through the supervisor:
 * `send` reaches every other worker's handlers of `name` (none outside a
 * supervisor, where a process has no siblings to tell).
 */
export function peerSignal (name: string): { send(): void, on(handler: () => void): void } {
  return {
    send: () => { if (cluster.isWorker) toSupervisor({ gateway: 'signal', name }) },
    on: handler => {
      if (cluster.isWorker) process.on('message', (message: ToWorker) => { if (message?.gateway === 'signal' && message.name === name) handler() })
    }
  }
}

/** Tells the supervisor this worker listens. No-op outside a cluster. */
export function reportListening (): void {
  toSupervisor({ gateway: 'listening' })
}

/** Calls `fn` once if this worker loses its supervisor (killed -9): a worker must not outlive it. */
export function onSupervisorGone (fn: () => void): void {
  if (cluster.isWorker) process.once('disconnect', fn)
}

function toSupervisor (message: ToSupervisor): void {
  if (process.send && process.connected) process.send(message, undefined, {}, () => undefined)
}
