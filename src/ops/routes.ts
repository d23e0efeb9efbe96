import type { Route } from '../http/index.js'
import type { Readiness } from './readiness.js'
import type { MetricsSource } from './worker-link.js'

/** `/health` (the process answers), `/health/ready` (its components do), `/metrics`. */
export function opsRoutes (readiness: Readiness, metrics?: MetricsSource): Route[] {
  const routes: Route[] = [
    { method: 'GET', path: '/health', quiet: true, handler: () => ({ status: 200, body: { status: 'ok' } }) },
    {
      method: 'GET',
      path: '/health/ready',
      quiet: true,
      handler: async () => {
        const { ready, components } = await readiness.check()
        return { status: ready ? 200 : 503, body: { status: ready ? 'ready' : 'not_ready', components } }
      }
    }
  ]
  if (metrics) {
    routes.push({
      method: 'GET',
      path: '/metrics',
      quiet: true,
      handler: async () => ({ status: 200, body: await metrics.text(), headers: { 'content-type': metrics.contentType } })
    })
  }
  return routes
}
