export { Readiness, type Probe, type ComponentState } from './readiness.js'
export { opsRoutes } from './routes.js'
export { createLogger } from './logger.js'
export { openApiRoute, type OpenApiPart } from './openapi.js'
