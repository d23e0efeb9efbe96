import cluster from 'node:cluster'
import { loadConfig, VERSION, workerCount, type Config } from '../config/index.js'
import { UsageError } from './usage.js'

const USAGE = `usage: gateway [start] [--workers N|auto]   run the service (configuration from the environment)
       gateway clients <add|list|remove|rotate|hash> ...
       gateway tail <topic> [--from N] [--follow]
       gateway --help | --version`

const HELP = `gateway ${VERSION}: telemetry and evidence gateway (login, asset track, event evidence, run harness)

Commands:
  start [--workers N|auto]      run the service (the default command); --workers overrides WORKERS:
                                N processes on the same ports under a supervisor
  clients add <client_id> --audience A [--audience B] --scope S [--scope T] [--tenant T]
                                add a client; its secret is printed once
  clients list                  the clients (never their secrets)
  clients remove <client_id>    remove a client
  clients rotate <client_id>    a new secret for a client, printed once
  clients hash                  read a secret on stdin, print its client_secret_hash (AUTH_CLIENTS_FILE)
  tail <topic> [--from N] [--follow]
                                print the local bus log of a topic (BUS=local) as JSON lines

Options:
  -h, --help                    this text
  -v, --version                 the version

Configuration is environment variables only (PORT, DATA_DIR, BUS, STORAGE, ...): every one, with its
default, is in docs/configuration.md; the design notes are in docs/ (docs/README.md).

Exit codes:
  0  done (start: stopped by SIGTERM or SIGINT after draining)
  1  failed: invalid configuration, a start-up step (DATA_DIR, the bus, the bucket) or the command
     itself (an unknown client, an unknown topic); the message says which and what to do
  2  usage: an unknown command or option, a missing argument`

/** Levels at which a failure's stack is printed beside its one line. */
const DEBUG = new Set(['debug', 'trace'])

/** The `gateway` executable; resolves to the exit code. */
export async function main (argv: string[]): Promise<number> {
  const [command = 'start', ...rest] = argv
  const out = (line: string): void => { process.stdout.write(line + '\n') }
  // Help and version need no configuration: they answer even where it is broken.
  switch (command) {
    case '-h': case '--help': case 'help':
      out(HELP)
      return 0
    case '-v': case '--version': case 'version':
      out(VERSION)
      return 0
  }
  try {
    const config = loadConfig()
    switch (command) {
      case 'start': return await start(config, rest)
      // Each command loads only its own modules: `gateway tail` starts in a third of the time.
      case 'clients': return await (await import('./clients.js')).clientsCommand(config, rest, out)
      case 'tail': return await (await import('./tail.js')).tailCommand(config, rest, out, interrupted())
      default:
        throw new UsageError(`unknown command ${command}\n${USAGE}`)
    }
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(err.message + '\n')
      return 2
    }
    process.stderr.write(`gateway: ${failure(err)}\n`)
    return 1
  }
}

/**
 * A failure as the operator reads it: its message on one line (a
 * configuration's problems on theirs), the stack, and its cause's, only
 * when LOG_LEVEL asks for debug.
 */
function failure (err: unknown): string {
  const text = err instanceof Error ? err.message : String(err)
  if (!DEBUG.has(process.env['LOG_LEVEL'] ?? '') || !(err instanceof Error)) return text
  const cause = err.cause instanceof Error ? `\ncaused by: ${err.cause.stack ?? err.cause.message}` : ''
  return `${text}\n${err.stack ?? ''}${cause}`
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
  await checkPortsFree(config)
  const { createLogger, logCrashes, logProcessWarnings, supervise } = await import('../ops/index.js')
  const { log, flush, flushSync } = createLogger(config.logLevel)
  logProcessWarnings(log)
  logCrashes(log, flushSync)
  const code = await supervise({
    workers: count,
    host: config.host,
    port: config.port,
    harnessPort: config.harnessPort,
    semiSpaceMb: config.heapSemiSpaceMb,
    // A worker's own deadline, then the bounded drain of cut-short bodies, then closing its stores.
    stopTimeoutMs: config.shutdownTimeoutMs + config.httpDrainTimeoutMs + 5_000,
    log: log.child({ role: 'supervisor' })
  })
  await flush().catch(() => undefined)
  return code
}

/**
 * The supervisor's workers bind with SO_REUSEPORT, which would let them join
 * another gateway already on the port: the supervisor binds each port alone
 * first, and fails as a single process would.
 */
async function checkPortsFree (config: Config): Promise<void> {
  const { bindProblem, listenError } = await import('../http/index.js')
  const ports: Array<[string, number]> = []
  if (config.roles.some(r => r !== 'harness')) ports.push(['PORT', config.port])
  if (config.roles.includes('harness')) ports.push(['HARNESS_PORT', config.harnessPort])
  for (const [setting, port] of ports) {
    const code = port === 0 ? undefined : await bindProblem(config.host, port)
    if (code !== undefined) throw listenError(code, setting, config.host, port)
  }
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
