import type { Route } from '../http/index.js'

export interface OpenApiPart {
  /** Component schemas by name; the same objects the validators compile. */
  schemas: Record<string, object>
  paths: Record<string, object>
}

/** `/openapi.json`: an OpenAPI 3.1 document assembled from the parts this process serves. */
export function openApiRoute (parts: OpenApiPart[]): Route {
  const doc = {
    openapi: '3.1.0',
    info: { title: 'evidence-gateway', version: '1.0.0', description: 'Login, asset track, event evidence and run harness.' },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: Object.assign({}, ...parts.map(p => p.schemas))
    },
    paths: Object.assign({}, ...parts.map(p => p.paths))
  }
  const body = Buffer.from(JSON.stringify(doc))
  return { method: 'GET', path: '/openapi.json', quiet: true, handler: () => ({ status: 200, body, headers: { 'content-type': 'application/json' } }) }
}
