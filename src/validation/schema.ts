import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import { snakeToCamel } from './case.js'
import { isIsoDateTimeWithZone } from './formats.js'
import { compileByteCheck, type ByteCheck } from './byte-check.js'

/**
 * One ajv setup for every request schema: all errors at once, the spec's
 * formats, and `x-error` (a schema annotation carrying the message to show).
 */
export function compileSchema<T> (schema: object): ValidateFunction<T> {
  return createAjv().compile<T>(schema)
}

function createAjv (): Ajv {
  const ajv = new Ajv({ allErrors: true, verbose: true, strict: true, allowUnionTypes: true })
  addFormats.default(ajv, ['date-time'])
  ajv.addFormat('iso-date-time', isIsoDateTimeWithZone)
  ajv.addKeyword({ keyword: 'x-error', schemaType: 'string' })
  return ajv
}

/**
 * The hot path's check of a body's bytes against `schema` (byte-check.ts),
 * with the very format functions compileSchema's ajv runs, so the two
 * cannot disagree about a timestamp.
 */
export function compileBodyCheck (schema: object, capture: readonly string[] = []): ByteCheck {
  return compileByteCheck(schema, formatFunction, capture)
}

let formats: Ajv['formats'] | undefined

/** The string format `name` as compileSchema's ajv checks it, or undefined when it has none. */
export function formatFunction (name: string): ((s: string) => boolean) | undefined {
  formats ??= createAjv().formats
  const format = formats[name]
  const check = typeof format === 'object' && !(format instanceof RegExp) ? (format.async === true || (format.type ?? 'string') !== 'string' ? undefined : format.validate) : format
  if (typeof check === 'function') return check as (s: string) => boolean
  if (check instanceof RegExp) return s => check.test(s)
  return undefined
}

/** `/metrics/items/3/k` → `metrics.items[3].k` */
export function errorKey (instancePath: string, property?: string): string {
  let key = ''
  const parts = instancePath.split('/').slice(1)
  if (property !== undefined) parts.push(property)
  for (const raw of parts) {
    const p = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    key += /^\d+$/.test(p) ? `[${p}]` : (key === '' ? '' : '.') + snakeToCamel(p)
  }
  return key
}

/** Every ajv error as `key → message`; the first message per key wins. */
export function errorMap (errors: ErrorObject[] | null | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const e of errors ?? []) {
    if (e.keyword === 'required') {
      const key = errorKey(e.instancePath, (e.params as { missingProperty: string }).missingProperty)
      out[key] ??= 'is required'
      continue
    }
    const key = errorKey(e.instancePath) || 'body'
    out[key] ??= message(e)
  }
  return out
}

function message (e: ErrorObject): string {
  const custom = (e.parentSchema as Record<string, unknown> | undefined)?.['x-error']
  if (typeof custom === 'string') return custom
  if (e.keyword === 'enum') return `must be one of: ${(e.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`
  if (e.keyword === 'type' && e.instancePath === '') return 'must be a JSON object'
  return e.message ?? 'is invalid'
}
