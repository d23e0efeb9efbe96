import type { Registry } from 'prom-client'
import type { Route } from '../http/index.js'
import type { Readiness } from './readiness.js'

/** `/health` (the process answers), `/health/ready` (its components do), `/metrics`. */
export function opsRoutes (readiness: Readiness, registry?: Registry): Route[] {
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
  if (registry) {
    routes.push({
      method: 'GET',
      path: '/metrics',
      quiet: true,
      handler: async () => ({ status: 200, body: await registry.metrics(), headers: { 'content-type': registry.contentType } })
    })
  }
  return routes
}
