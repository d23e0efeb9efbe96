export { TelemetryService, TELEMETRY_SCOPE } from './service.js'
export { validateRecord, recordErrors, headerErrors, toMessage, TELEMETRY_SCHEMA_HEADER, type AssetTrackingData } from './record.js'
export { assetTrackingSchema, METRIC_KEY_PATTERN, METRICS_SCHEMA, MAX_EVENTS } from './schema.js'
export { telemetryOpenApi } from './openapi.js'
