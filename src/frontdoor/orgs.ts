import { readJsonFile } from '../config/index.js'

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

/** ORGS_FILE: `{ "<slug>": { "tenant": "...", "members": ["<sub or client_id>", ...] } }`, read once at start. */
export function loadOrgs (file: string | undefined): ReadonlyMap<string, Org> {
  if (!file) return new Map()
  return new Map(Object.entries(readJsonFile<Record<string, Org>>('ORGS_FILE', file, schema)))
}
