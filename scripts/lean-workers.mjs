// Preloaded into every test process (package.json "tap" "node-arg"): worker
// threads started without execArgv of their own (the scrypt and hash pools
// of an in-process gateway) get tap's preloads minus @tapjs/mock (no test
// mocks a module in a worker) and @tapjs/processinfo (it tracks files for
// coverage, which is off). Those two cost each worker about 1.1 s of CPU,
// over half of its start, and the suite starts hundreds: the code in the
// worker is the same, loaded by the same TypeScript loader.
import { createRequire, syncBuiltinESMExports } from 'node:module'

const threads = createRequire(import.meta.url)('node:worker_threads')
const lean = process.execArgv.filter(arg => !/@tapjs[\\/](mock|processinfo)[\\/]/.test(arg))

class LeanWorker extends threads.Worker {
  constructor (filename, options = {}) {
    super(filename, options.execArgv === undefined ? { ...options, execArgv: lean } : options)
  }
}
threads.Worker = LeanWorker
syncBuiltinESMExports()
