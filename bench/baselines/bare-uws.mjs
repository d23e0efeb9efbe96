// Baseline for the `health` scenario: the uWebSockets.js build the gateway
// uses, answering GET /health with the same body and doing nothing else.
// Listens on HOST:PORT (PORT 0: the kernel picks), prints
// {"msg":"bare-uws listening","port":N} on stdout, exits 0 on SIGTERM/SIGINT.
import { loadUws, listen } from '../lib/uws.mjs'

const uWS = loadUws('bare-uws')
listen(uWS, uWS.App().get('/health', res => { res.end('{"status":"ok"}') }), 'bare-uws')
