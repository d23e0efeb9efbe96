// Writes the rules the Go peer validates with, taken from the gateway's own
// build (dist/, so `npm run build` first) rather than copied by hand: the
// AssetTrackingData JSON Schema the gateway compiles with ajv, and the
// X-Request-Id grammar. Usage: node export-schema.mjs <out.json>
import { writeFileSync } from 'node:fs'
import { assetTrackingSchema, METRICS_SCHEMA } from '../../../dist/telemetry/schema.js'
import { REQUEST_ID } from '../../../dist/validation/index.js'

const out = process.argv[2]
if (!out) throw new Error('usage: node export-schema.mjs <out.json>')
writeFileSync(out, JSON.stringify({ schema: assetTrackingSchema([METRICS_SCHEMA]), requestIdPattern: REQUEST_ID.source }, null, 2) + '\n')
