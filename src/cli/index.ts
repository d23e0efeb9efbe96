import { loadConfig, ConfigError, type Config } from '../config/index.js'
import { startGateway } from '../main.js'
import { createLogger } from '../ops/index.js'
import { clientsCommand, UsageError } from './clients.js'
import { tailCommand } from './tail.js'

const USAGE = `usage: gateway [start]                 run the service (configuration from the environment)
       gateway clients <add|list|remove|rotate|hash> ...
       gateway tail <topic> [--from N] [--follow]`

/** The `gateway` executable; resolves to the exit code. */
export async function main (argv: string[]): Promise<number> {
  const [command = 'start', ...rest] = argv
  const out = (line: string): void => { process.stdout.write(line + '\n') }
  try {
    const config = loadConfig()
    switch (command) {
      case 'start': return await serve(config)
      case 'clients': return await clientsCommand(config, rest, out)
      case 'tail': return await tailCommand(config, rest, out, interrupted())
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

async function serve (config: Config): Promise<number> {
  const { log, flush } = createLogger(config.logLevel)
  const gateway = await startGateway(config, log)
  return new Promise(resolve => {
    const stop = (signal: NodeJS.Signals): void => {
      process.off('SIGTERM', stop)
      process.off('SIGINT', stop)
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
  })
}

function interrupted (): AbortSignal {
  const ac = new AbortController()
  process.once('SIGINT', () => ac.abort())
  process.once('SIGTERM', () => ac.abort())
  return ac.signal
}
