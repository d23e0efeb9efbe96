import { LABEL_MAX } from '../validation/index.js'

/**
 * AssetTrackingData as a JSON Schema: compiled once for validation and served
 * as-is in /openapi.json. Unknown properties are allowed at every level and
 * published as received (forward compatibility). `x-error` replaces ajv's
 * message where the spec's wording is clearer.
 */
const range = (minimum: number, maximum: number, unit: string): object =>
  ({ type: 'number', minimum, maximum, 'x-error': `must be a number between ${minimum} and ${maximum}${unit}` })
const nonNegative = (unit: string): object => ({ type: 'number', minimum: 0, 'x-error': `must be a number >= 0 (${unit})` })
const isoTimestamp = { type: 'string', format: 'iso-date-time', 'x-error': 'must be an ISO 8601 timestamp with a timezone' }
const rfc3339 = { type: 'string', format: 'date-time', 'x-error': 'must be an RFC 3339 timestamp' }
const object = { type: 'object' }
/**
 * An integer field's range, int64 at most. 2^63 is the double every literal
 * near int64's top parses to, so it bounds the forms JSON.parse rounds (a
 * `1e19`); the literal itself is compared exactly by jsonTextProblems.
 */
const int64 = (minimum: number): object =>
  ({ type: 'integer', minimum, maximum: 2 ** 63, 'x-error': `must be an integer from ${minimum === 0 ? 0 : '-9223372036854775808'} to 9223372036854775807` })

export const METRIC_KEY_PATTERN = '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*){1,5}$'
export const METRICS_SCHEMA = 'svc.metrics@1.0'
export const MAX_EVENTS = 1000

export const metricItemSchema = {
  type: 'object',
  required: ['k', 'v'],
  properties: {
    k: { type: 'string', pattern: METRIC_KEY_PATTERN, 'x-error': 'must be 2 to 6 dot-separated lowercase segments (e.g. engine.rpm)' },
    v: { type: ['number', 'boolean', 'string', 'object', 'array'], 'x-error': 'must be a number, boolean, string, object or array' },
    u: { type: 'string' },
    ts: rfc3339,
    src: { enum: ['obd2', 'j1939', 'can', 'oem', 'derived', 'unknown'] },
    q: { enum: ['ok', 'estimated', 'stale', 'invalid', 'missing'] },
    meta: object
  }
}

/**
 * The record's schema accepting these `metrics.schema` values: the spec's,
 * and any an operator lists (TELEMETRY_METRICS_SCHEMAS) for devices that
 * cannot be re-flashed. Any other value is refused in the spec's words.
 */
export const assetTrackingSchema = (metricsSchemas: readonly string[]) => ({
  $id: 'AssetTrackingData',
  type: 'object',
  required: ['asset_id', 'timestamp'],
  properties: {
    // Also a label (checked in record.ts, where each problem gets its own message).
    asset_id: { type: 'string', pattern: '\\S', 'x-error': 'must be a non-blank string', description: `bus key: non-blank, at most ${LABEL_MAX} characters, well-formed Unicode without control characters` },
    timestamp: isoTimestamp,
    type: { type: 'string' },
    owner: { type: 'string' },
    year: int64(-(2 ** 63)),
    gps: {
      type: 'object',
      properties: {
        latitude: range(-90, 90, ' degrees'),
        longitude: range(-180, 180, ' degrees'),
        altitude: { type: 'number' },
        speed: nonNegative('km/h'),
        heading: range(0, 360, ' degrees'),
        accuracy: nonNegative('meters')
      }
    },
    telecom: object,
    sensors: {
      type: 'object',
      properties: {
        acceleration: {
          type: 'object',
          properties: { x_axis: range(-3, 3, ' g'), y_axis: range(-3, 3, ' g'), z_axis: range(-3, 3, ' g'), g_force: range(0, 5, ' g') }
        },
        gyroscope: {
          type: 'object',
          properties: { rotation_rate_x: range(-10, 10, ' rad/s'), rotation_rate_y: range(-10, 10, ' rad/s'), rotation_rate_z: range(-10, 10, ' rad/s') }
        },
        odometer: nonNegative('km'),
        // The origin system's clients send a boolean; the spec says 1/0.
        engine_status: { enum: [0, 1, true, false], 'x-error': 'must be 1 or true (on), 0 or false (off)' }
      }
    },
    driver_info: object,
    co_driver_info: object,
    peripherals: object,
    metrics: {
      type: 'object',
      required: ['schema', 'items'],
      properties: {
        schema: { enum: [...metricsSchemas], 'x-error': `must equal ${METRICS_SCHEMA}` },
        items: { type: 'array', minItems: 1, maxItems: 200, items: metricItemSchema, 'x-error': 'must hold 1 to 200 metric items' },
        seq: int64(0),
        device_ts: rfc3339,
        capabilities: object
      }
    },
    events: {
      type: 'array',
      maxItems: MAX_EVENTS,
      items: {
        type: 'object',
        required: ['event_type', 'timestamp'],
        properties: {
          event_type: { type: 'string', minLength: 1 },
          timestamp: isoTimestamp,
          severity: { enum: ['low', 'medium', 'high'] },
          threshold_exceeded: { type: 'boolean' },
          additional_info: {
            type: 'object',
            properties: { g_force: range(0, 5, ' g'), speed_at_event: range(0, 250, ' km/h'), cargo_weight: range(0, 20000, ' kg') }
          }
        }
      }
    }
  }
})
