import type { Route } from '../http/index.js'
import type { Readiness } from './readiness.js'
import { metricsGate, type MetricsAccess } from './metrics-access.js'
import type { MetricsSource } from './worker-link.js'

/**
 * `/health` (liveness: the process answers), `/health/ready` (readiness: the
 * components the port cannot serve without answer), `/health/ready/{component}`
 * (that one too: the bus, for a pool that takes only telemetry), `/metrics`
 * for those `access` admits.
 */
export function opsRoutes (readiness: Readiness, metrics?: MetricsSource, access: MetricsAccess = {}): Route[] {
  const routes: Route[] = [
    { method: 'GET', path: '/health', quiet: true, handler: () => ({ status: 200, body: { status: 'ok' } }) },
    { method: 'GET', path: '/health/ready', quiet: true, handler: () => ready(readiness) },
    {
      method: 'GET',
      path: '/health/ready/{component}',
      quiet: true,
      handler: ctx => {
        const component = ctx.params['component']!
        if (!readiness.has(component)) return { status: 404, body: { status: 'unknown_component', component } }
        return ready(readiness, component)
      }
    }
  ]
  if (metrics) {
    const admit = metricsGate(access)
    routes.push({
      method: 'GET',
      path: '/metrics',
      quiet: true,
      authorize: admit,
      handler: async () => ({ status: 200, body: await metrics.text(), headers: { 'content-type': metrics.contentType } })
    })
  }
  return routes
}

async function ready (readiness: Readiness, also?: string): Promise<{ status: number, body: unknown }> {
  const { ready, components } = await readiness.check(also)
  return { status: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not_ready', components } }
}
