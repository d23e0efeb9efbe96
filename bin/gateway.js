#!/usr/bin/env node
import { main } from '../dist/cli/index.js'

/** Longest wait for stdout to take what was written before exiting anyway (a reader that stopped reading). */
const STDOUT_DRAIN_MS = 5000

// Exit explicitly: kept-alive client sockets would otherwise hold the loop open after shutdown.
// But only once stdout has what was written: into a pipe it is written asynchronously, and
// process.exit() drops the rest (`gateway tail | jq` lost most of a long log).
const code = await main(process.argv.slice(2))
setTimeout(() => process.exit(code), STDOUT_DRAIN_MS)
process.stdout.write('', () => process.exit(code))
