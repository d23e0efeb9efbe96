import t from 'tap'
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client'
import { RequestMetrics } from '../../src/http/request-metrics.js'

// What /metrics shows, and what workers send the supervisor, must be what
// prom-client's own Histogram and Counter give for the same requests.

const BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10]
const requests: Array<[string, string, number, number]> = [
  ['POST', '/v1/asset/track', 200, 0.0031], ['POST', '/v1/asset/track', 200, 0.0005], ['POST', '/v1/asset/track', 200, 0.00051],
  ['POST', '/v1/asset/track', 400, 0], ['GET', '/health', 200, 10], ['GET', '/health', 200, 12.5], ['POST', '/v1/asset/track', 200, 2.5],
  ['GET', 'unmatched', 404, 0.0009]
]

function prom (): Registry {
  const registry = new Registry()
  const labelNames = ['server', 'method', 'route', 'status']
  const h = new Histogram({ name: 'gw_http_request_duration_seconds', help: 'Latency', labelNames, buckets: BOUNDS, registers: [registry] })
  const c = new Counter({ name: 'gw_http_requests_total', help: 'Requests', labelNames, registers: [registry] })
  for (const [method, route, status, seconds] of requests) {
    h.labels({ server: 'gateway', method, route, status: String(status) }).observe(seconds)
    c.labels({ server: 'gateway', method, route, status: String(status) }).inc()
  }
  return registry
}

function ours (): Registry {
  const registry = new Registry()
  const m = new RequestMetrics({ histogram: 'gw_http_request_duration_seconds', counter: 'gw_http_requests_total' }, BOUNDS, { histogram: 'Latency', counter: 'Requests' }, registry)
  for (const [method, route, status, seconds] of requests) m.observe('gateway', method, route, status, seconds)
  return registry
}

t.test('the text of /metrics is prom-client\'s, line for line', async t => {
  t.equal(await ours().metrics(), await prom().metrics())
})

t.test('the JSON a worker sends, and its aggregate over two workers, are prom-client\'s', async t => {
  t.same(await ours().getMetricsAsJSON(), await prom().getMetricsAsJSON())
  const aggregated = async (r: () => Registry): Promise<string> => AggregatorRegistry.aggregate([await r().getMetricsAsJSON(), await r().getMetricsAsJSON()]).metrics()
  t.equal(await aggregated(ours), await aggregated(prom))
})

t.test('a registry reset empties them', async t => {
  const registry = ours()
  registry.resetMetrics()
  t.notMatch(await registry.metrics(), /gw_http_requests_total\{/)
})
