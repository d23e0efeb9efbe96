import type { OpenApiPart } from './openapi.js'

const json = (schema: object): object => ({ 'application/json': { schema } })
const Readiness = {
  type: 'object',
  required: ['status', 'components'],
  properties: {
    status: { enum: ['ready', 'not_ready'] },
    components: { type: 'object', additionalProperties: { type: 'object' }, description: 'each component\'s state (lmdb, bus, storage, outbox...)' }
  }
}

/** Health, readiness, `/metrics` (where the port serves it) and this document. */
export function opsOpenApi (metrics: boolean): OpenApiPart {
  const paths: Record<string, object> = {
    '/health': {
      get: { operationId: 'getHealth', summary: 'Liveness: the process answers', security: [], responses: { 200: { description: 'Alive', content: json({ type: 'object', required: ['status'], properties: { status: { const: 'ok' } } }) } } }
    },
    '/health/ready': {
      get: { operationId: 'getReadiness', summary: 'Readiness: every component this port needs answers', security: [], responses: { 200: { description: 'Ready', content: json({ $ref: '#/components/schemas/Readiness' }) }, 503: { description: 'Not ready: `components` says which', content: json({ $ref: '#/components/schemas/Readiness' }) } } }
    },
    '/health/ready/{component}': {
      get: {
        operationId: 'getComponentReadiness',
        summary: 'Readiness with one optional component required too (the bus, for a pool that takes telemetry only)',
        security: [],
        parameters: [{ name: 'component', in: 'path', required: true, schema: { type: 'string' } }],
        responses: {
          200: { description: 'Ready', content: json({ $ref: '#/components/schemas/Readiness' }) },
          404: { description: 'No such component', content: json({ type: 'object', properties: { status: { const: 'unknown_component' }, component: { type: 'string' } } }) },
          503: { description: 'Not ready', content: json({ $ref: '#/components/schemas/Readiness' }) }
        }
      }
    },
    '/openapi.json': {
      get: { operationId: 'getOpenApi', summary: 'This document: the routes of this port', security: [], responses: { 200: { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } } }
    }
  }
  if (metrics) {
    paths['/metrics'] = {
      get: { operationId: 'getMetrics', summary: 'Prometheus metrics of the process (docs/operations.md)', security: [], responses: { 200: { description: 'The text exposition format', content: { 'text/plain': { schema: { type: 'string' } } } } } }
    }
  }
  return {
    tag: { name: 'ops', description: 'Health, readiness, metrics and this document' },
    errorSchema: { $ref: '#/components/schemas/PlainError' },
    schemas: { Readiness, PlainError: { type: 'object', required: ['status', 'code'], properties: { status: { const: 'error' }, code: { type: 'string' }, message: { type: 'string' } } } },
    paths
  }
}
