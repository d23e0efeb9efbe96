export { TelemetryService, TELEMETRY_SCOPE } from './service.js'
export { recordErrors, toMessage, type AssetTrackingData } from './record.js'
export { assetTrackingSchema } from './schema.js'
export { telemetryOpenApi } from './openapi.js'
