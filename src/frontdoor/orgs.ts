import { readFileSync } from 'node:fs'
import { Ajv } from 'ajv'

export interface Org {
  tenant: string
  /** Token `sub` or `client_id` values that belong to the org. */
  members: readonly string[]
}

const schema = {
  type: 'object',
  additionalProperties: {
    type: 'object',
    required: ['tenant', 'members'],
    additionalProperties: false,
    properties: { tenant: { type: 'string', minLength: 1 }, members: { type: 'array', items: { type: 'string', minLength: 1 } } }
  }
}
const validate = new Ajv({ allErrors: true }).compile<Record<string, Org>>(schema)

/** ORGS_FILE: `{ "<slug>": { "tenant": "...", "members": ["<sub or client_id>", ...] } }`, read once at start. */
export function loadOrgs (file: string | undefined): ReadonlyMap<string, Org> {
  if (!file) return new Map()
  let value: unknown
  try {
    value = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new Error(`ORGS_FILE ${file}: ${(err as Error).message}`)
  }
  if (!validate(value)) {
    const e = validate.errors?.[0]
    throw new Error(`ORGS_FILE ${file}: ${e?.instancePath || '/'} ${e?.message ?? 'invalid'}`)
  }
  return new Map(Object.entries(value))
}
