// GET /health on the gateway beside a bare uWS handler that answers the same
// route with the same body: how much the gateway's HTTP core (routing,
// request context, metrics, error mapping) costs per request.
import { bareUws, gateway } from '../lib/targets.mjs'

export default {
  name: 'health',
  description: 'GET /health: the gateway beside a bare uWS handler (same uWS build, same body)',
  targets: [bareUws(), gateway()],
  baseline: 'bare-uws',
  request: { method: 'GET', path: '/health' }
}
