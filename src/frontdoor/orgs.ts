import { readJsonFile } from '../config/index.js'
import { STORAGE_ID_PATTERN } from '../validation/index.js'

export interface Org {
  tenant: string
  /** Token `sub` or `client_id` values that belong to the org. */
  members: ReadonlySet<string>
}

const schema = {
  type: 'object',
  additionalProperties: {
    type: 'object',
    required: ['tenant', 'members'],
    additionalProperties: false,
    properties: { tenant: { type: 'string', pattern: STORAGE_ID_PATTERN }, members: { type: 'array', items: { type: 'string', minLength: 1 } } }
  }
}

/**
 * ORGS_FILE: `{ "<slug>": { "tenant": "...", "members": ["<sub or client_id>", ...] } }`, read once at start.
 * A tenant is a storage identifier, as the harness requires of the header it travels in.
 */
export function loadOrgs (file: string | undefined): ReadonlyMap<string, Org> {
  if (!file) return new Map()
  const orgs = readJsonFile<Record<string, { tenant: string, members: string[] }>>('ORGS_FILE', file, schema)
  return new Map(Object.entries(orgs).map(([slug, org]) => [slug, { tenant: org.tenant, members: new Set(org.members) }]))
}
