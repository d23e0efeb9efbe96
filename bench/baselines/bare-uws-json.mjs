// Baseline `bare-uws-json` of the `telemetry` scenario: the uWebSockets.js
// build the gateway uses, reading a POST body (onData), JSON.parse, and
// answering 200 with the gateway's success body. No authentication, no
// validation, no publish: the floor of "a JSON POST on uWS in Node".
// Listens on HOST:PORT (PORT 0: the kernel picks), prints
// {"msg":"bare-uws-json listening","port":N} on stdout, exits 0 on SIGTERM/SIGINT.
import { loadUws, listen, readJson } from '../lib/uws.mjs'

const SUCCESS = JSON.stringify({ status: 'success', message: 'message sent successfully' })
const BAD = JSON.stringify({ status: 'error', message: 'body is not JSON' })

const uWS = loadUws('bare-uws-json')
const app = uWS.App().post('/v1/asset/track', res => {
  readJson(res, body => {
    // Inside uWS's own callback: the writes are corked already.
    res.writeStatus(body === undefined ? '400 Bad Request' : '200 OK').writeHeader('content-type', 'application/json').end(body === undefined ? BAD : SUCCESS)
  })
})
listen(uWS, app, 'bare-uws-json')
