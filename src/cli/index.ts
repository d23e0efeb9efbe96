import cluster from 'node:cluster'
import { loadConfig, ConfigError, workerCount, type Config } from '../config/index.js'
import { UsageError } from './usage.js'

const USAGE = `usage: gateway [start] [--workers N|auto]   run the service (configuration from the environment)
       gateway clients <add|list|remove|rotate|hash> ...
       gateway tail <topic> [--from N] [--follow]`

/** The `gateway` executable; resolves to the exit code. */
export async function main (argv: string[]): Promise<number> {
  const [command = 'start', ...rest] = argv
  const out = (line: string): void => { process.stdout.write(line + '\n') }
  try {
    const config = loadConfig()
    switch (command) {
      case 'start': return await start(config, rest)
      // Each command loads only its own modules: `gateway tail` starts in a third of the time.
      case 'clients': return await (await import('./clients.js')).clientsCommand(config, rest, out)
      case 'tail': return await (await import('./tail.js')).tailCommand(config, rest, out, interrupted())
      case '-h': case '--help': case 'help':
        out(USAGE)
        return 0
      default:
        throw new UsageError(`unknown command ${command}\n${USAGE}`)
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(err.message + '\n')
      return 2
    }
    const text = err instanceof ConfigError ? err.message : (err as Error).stack ?? String(err)
    process.stderr.write(`gateway: ${text}\n`)
    return 1
  }
}

/** `--workers` overrides WORKERS; above one process, this one becomes the supervisor of the others. */
async function start (config: Config, args: string[]): Promise<number> {
  let workers = config.workers
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    if (arg === '--workers' && i + 1 < args.length) workers = args[++i]!
    else if (arg.startsWith('--workers=')) workers = arg.slice('--workers='.length)
    else throw new UsageError(`unknown option ${arg}\n${USAGE}`)
  }
  const count = workerCount(workers)
  if (count === 1 || cluster.isWorker) return await serve(config)
  const { createLogger, logCrashes, logProcessWarnings, supervise } = await import('../ops/index.js')
  const { log, flush, flushSync } = createLogger(config.logLevel)
  logProcessWarnings(log)
  logCrashes(log, flushSync)
  const code = await supervise({
    workers: count,
    host: config.host,
    port: config.port,
    harnessPort: config.harnessPort,
    // A worker's own deadline, then the bounded drain of cut-short bodies, then closing its stores.
    stopTimeoutMs: config.shutdownTimeoutMs + config.httpDrainTimeoutMs + 5_000,
    log: log.child({ role: 'supervisor' })
  })
  await flush().catch(() => undefined)
  return code
}

async function serve (config: Config): Promise<number> {
  const [{ startGateway }, { createLogger, logCrashes, logProcessWarnings, onSupervisorGone, reportListening, workerSlot }] = await Promise.all([import('../main.js'), import('../ops/index.js')])
  const service = createLogger(config.logLevel)
  const slot = workerSlot()
  const log = slot === undefined ? service.log : service.log.child({ worker: slot })
  logProcessWarnings(log)
  logCrashes(log, service.flushSync)
  const { flush } = service
  const gateway = await startGateway(config, log)
  reportListening()
  return new Promise(resolve => {
    let stopped = false
    const stop = (signal: NodeJS.Signals): void => {
      if (stopped) return
      stopped = true
      process.off('SIGTERM', stop)
      process.off('SIGINT', stop)
      // A worker drains once: Ctrl-C reaches it and the supervisor's SIGTERM follows.
      if (slot !== undefined) for (const s of ['SIGTERM', 'SIGINT'] as const) process.on(s, () => undefined)
      // Stop first: its synchronous part closes the listeners, so whoever reads
      // this log line can rely on new connections being refused already.
      const stopping = gateway.stop()
      log.info({ signal }, 'shutting down')
      stopping.then(({ drained }) => {
        log.info({ drained }, 'stopped')
        return 0
      }, err => {
        log.fatal({ err }, 'shutdown failed')
        return 1
      }).then(async code => {
        // A log that cannot be flushed (stdout closed) has no one left to tell.
        await flush().catch(() => undefined)
        resolve(code)
      })
    }
    process.on('SIGTERM', stop)
    process.on('SIGINT', stop)
    onSupervisorGone(() => stop('SIGTERM'))
  })
}

function interrupted (): AbortSignal {
  const ac = new AbortController()
  process.once('SIGINT', () => ac.abort())
  process.once('SIGTERM', () => ac.abort())
  return ac.signal
}
