import cluster, { type Worker } from 'node:cluster'
import { createServer, type AddressInfo } from 'node:net'
import type { Logger } from 'pino'
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client'
import { perWorker, type Figures, type ToSupervisor, type ToWorker } from './cluster-messages.js'
import { withSemiSpace } from './gc.js'

export interface SupervisorOptions {
  workers: number
  host: string
  /** Configured ports; 0 means "any free port", chosen here once for all workers. */
  port: number
  harnessPort: number
  /** HEAP_SEMI_SPACE_MB: given to each worker on its command line, where V8 takes it on every runtime. */
  semiSpaceMb: number
  /** How long a worker may take to drain after SIGTERM before it is killed (SHUTDOWN_TIMEOUT_MS plus the body drain, plus a margin). */
  stopTimeoutMs: number
  log: Logger
}

/** First restart delay of a slot whose worker died; doubles on each death in a row. */
const RESTART_MIN_MS = 100
const RESTART_MAX_MS = 10_000
/** A worker that lived this long before dying starts its slot's backoff afresh. */
const HEALTHY_AFTER_MS = 30_000
/** How long a /metrics answer waits for the other workers' figures; a silent worker is left out. */
const COLLECT_TIMEOUT_MS = 2_000

interface Slot {
  index: number
  worker: Worker | undefined
  startedAt: number
  deaths: number
  restart: NodeJS.Timeout | undefined
}

/**
 * The `gateway start` process when WORKERS > 1: the node:cluster primary.
 * It serves nothing itself. It forks one full gateway per slot (in turn) on the same
 * ports (uWS listens with SO_REUSEPORT, the kernel spreads connections),
 * restarts a worker that dies, answers the workers' requests for the
 * aggregated /metrics, and on SIGTERM or SIGINT drains them all. Resolves
 * with the exit code: 0 when every worker stopped cleanly.
 */
export async function supervise (options: SupervisorOptions): Promise<number> {
  const { log } = options
  const registry = new Registry()
  const restarts = new Counter({ name: 'gateway_worker_restarts_total', help: 'Workers restarted by the supervisor after they died', registers: [registry] })
  const slots: Slot[] = Array.from({ length: options.workers }, (_, index) => ({ index, worker: undefined, startedAt: 0, deaths: 0, restart: undefined }))
  new Gauge({
    name: 'gateway_workers_up',
    help: 'Worker processes running (WORKERS is the most)',
    registers: [registry],
    collect () { this.set(slots.filter(s => s.worker?.isConnected() === true).length) }
  })
  let up = false
  let stopping = false
  let exitCode = 0
  const listening = new Set<number>()
  const collections = new Map<number, { pending: Set<number>, figures: Figures[], done: () => void }>()
  let nextCollection = 0

  // uWS sets SO_REUSEPORT only on a listener with a given port: one bound to
  // port 0 admits no other process. So 0 is turned into a free port here.
  const ports = { port: await freePort(options.host, options.port), harnessPort: await freePort(options.host, options.harnessPort) }

  cluster.setupPrimary({ execArgv: withSemiSpace(process.execArgv, options.semiSpaceMb) })
  return await new Promise(resolve => {
    const fork = (slot: Slot): void => {
      slot.restart = undefined
      // The slot number names the worker in logs and in per-worker series across restarts.
      const worker = cluster.fork({ PORT: String(ports.port), HARNESS_PORT: String(ports.harnessPort), GATEWAY_WORKER_SLOT: String(slot.index + 1) })
      slot.worker = worker
      slot.startedAt = performance.now()
      worker.on('message', (message: ToSupervisor) => onMessage(slot, worker, message))
      worker.once('exit', (code: number | null, signal: NodeJS.Signals | null) => onExit(slot, worker, code, signal))
    }

    const onMessage = (slot: Slot, worker: Worker, message: ToSupervisor): void => {
      switch (message?.gateway) {
        case 'listening': {
          listening.add(slot.index)
          // One at a time at start: a worker recovers what the last stop left in
          // the shared DATA_DIR (runs in flight end as interrupted) before it
          // listens, which must not catch a sibling's first runs.
          if (!up && !stopping && slot.index + 1 < slots.length) fork(slots[slot.index + 1]!)
          if (!up && listening.size === slots.length) {
            up = true
            log.info({ workers: slots.length, ...ports }, 'workers listening')
          }
          return
        }
        case 'metrics': {
          aggregate().then(text => send(worker, { gateway: 'metrics', id: message.id, text }), err => send(worker, { gateway: 'metrics', id: message.id, error: (err as Error).message }))
          return
        }
        case 'signal': {
          for (const other of slots) if (other.worker && other.worker !== worker) send(other.worker, message)
          return
        }
        case 'figures': {
          const collection = collections.get(message.id)
          if (!collection?.pending.delete(slot.index)) return
          collection.figures.push(labelled(message.figures, slot.index + 1))
          if (collection.pending.size === 0) collection.done()
        }
      }
    }

    const onExit = (slot: Slot, worker: Worker, code: number | null, signal: NodeJS.Signals | null): void => {
      if (slot.worker !== worker) return
      slot.worker = undefined
      listening.delete(slot.index)
      for (const c of collections.values()) if (c.pending.delete(slot.index) && c.pending.size === 0) c.done()
      if (stopping) {
        if (code !== 0) exitCode = 1
        log.info({ worker: slot.index + 1, pid: worker.process.pid, code, signal }, 'worker stopped')
        if (slots.every(s => s.worker === undefined)) resolve(exitCode)
        return
      }
      if (!up) {
        // A worker that cannot start (port taken, DATA_DIR unreadable) would fail the same way again.
        log.fatal({ worker: slot.index + 1, pid: worker.process.pid, code, signal }, 'worker failed to start')
        exitCode = 1
        stop(null)
        return
      }
      slot.deaths = performance.now() - slot.startedAt >= HEALTHY_AFTER_MS ? 1 : slot.deaths + 1
      const delayMs = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** (slot.deaths - 1))
      restarts.inc()
      log.error({ worker: slot.index + 1, pid: worker.process.pid, code, signal, restartInMs: delayMs }, 'worker died')
      slot.restart = setTimeout(() => fork(slot), delayMs)
    }

    /** Every worker's figures, summed by prom-client's aggregators, with the supervisor's own. */
    const aggregate = async (): Promise<string> => {
      const id = nextCollection++
      const pending = new Set(slots.filter(s => s.worker?.isConnected() === true).map(s => s.index))
      const figures: Figures[] = [await registry.getMetricsAsJSON()]
      await new Promise<void>(resolve => {
        const timer = setTimeout(done, COLLECT_TIMEOUT_MS)
        function done (): void { clearTimeout(timer); collections.delete(id); resolve() }
        collections.set(id, { pending, figures, done })
        for (const index of pending) send(slots[index]!.worker!, { gateway: 'collect', id })
        if (pending.size === 0) done()
      })
      return await AggregatorRegistry.aggregate(figures).metrics()
    }

    const stop = (signal: NodeJS.Signals | null): void => {
      if (stopping) {
        // A second signal: the operator does not want to wait for the drain.
        for (const s of slots) s.worker?.process.kill('SIGKILL')
        return
      }
      stopping = true
      log.info({ signal }, 'shutting down workers')
      for (const s of slots) clearTimeout(s.restart)
      for (const s of slots) s.worker?.process.kill('SIGTERM')
      if (slots.every(s => s.worker === undefined)) return resolve(exitCode)
      setTimeout(() => {
        const left = slots.filter(s => s.worker !== undefined)
        if (left.length > 0) log.warn({ workers: left.map(s => s.index + 1) }, 'workers still draining past the deadline: killed')
        for (const s of left) s.worker!.process.kill('SIGKILL')
      }, options.stopTimeoutMs).unref()
    }

    process.on('SIGTERM', stop)
    process.on('SIGINT', stop)
    fork(slots[0]!)
  })
}

/** `port`, or when it is 0 a port free on `host` right now (another program could take it before the workers do: PORT=0 is for tests). */
async function freePort (host: string, port: number): Promise<number> {
  if (port !== 0) return port
  const server = createServer()
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, resolve))
  const { port: free } = server.address() as AddressInfo
  await new Promise(resolve => server.close(resolve))
  return free
}

function send (worker: Worker, message: ToWorker): void {
  // A worker that is going away answers nobody; the collection's timeout covers it.
  if (worker.isConnected()) worker.send(message, () => undefined)
}

/** Gives series that must not be summed across workers a `worker` label, so each stays apart (and none is omitted). */
function labelled (figures: Figures, worker: number): Figures {
  return figures.map(m => perWorker(m.name)
    ? { ...m, aggregator: 'sum', values: m.values.map(v => ({ ...v, labels: { ...v.labels, worker: String(worker) } })) }
    : m)
}
