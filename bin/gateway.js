#!/usr/bin/env node
import { main } from '../dist/cli/index.js'

// Exit explicitly: kept-alive client sockets would otherwise hold the loop open after shutdown.
process.exit(await main(process.argv.slice(2)))
