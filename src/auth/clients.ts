import type { Logger } from 'pino'
import { ConfigError, readJsonFile } from '../config/index.js'
import type { Client, ClientStore } from './client-store.js'
import { isStorageId, STORAGE_ID_RULE } from '../validation/index.js'
import { isSecretHash } from './secrets.js'

export type { Client } from './client-store.js'

const fileSchema = {
  type: 'array',
  items: {
    type: 'object',
    required: ['client_id', 'audiences', 'scopes'],
    additionalProperties: false,
    properties: {
      client_id: { type: 'string', minLength: 1 },
      client_secret: { type: 'string', minLength: 1 },
      client_secret_hash: { type: 'string', minLength: 1 },
      audiences: { type: 'array', items: { type: 'string', minLength: 1 } },
      scopes: { type: 'array', items: { type: 'string', minLength: 1 } },
      tenant: { type: 'string', minLength: 1 }
    },
    oneOf: [{ required: ['client_secret'] }, { required: ['client_secret_hash'] }]
  }
}
type FileEntry = Omit<Client, 'client_secret_hash' | 'tenant'> & { client_secret?: string, client_secret_hash?: string, tenant?: string }

/**
 * Why a client's id or tenant cannot be used, or undefined. Both become
 * object-key prefixes and idempotency keys, so both are storage identifiers
 * (docs/identifiers.md); a client that could not log in usefully is refused
 * where it is registered, not at its first upload.
 */
export function clientIdentityProblem (clientId: string, tenant: string = clientId): string | undefined {
  if (!isStorageId(clientId)) return `client_id ${JSON.stringify(clientId)} ${STORAGE_ID_RULE}`
  if (!isStorageId(tenant)) return `tenant ${JSON.stringify(tenant)} of client ${clientId} ${STORAGE_ID_RULE}`
  return undefined
}

/**
 * Clients from AUTH_CLIENTS_FILE (read once at start) and from a ClientStore
 * (written by `gateway clients`, read on logins so a running service sees
 * changes: LMDB on one node, S3 in a cluster). A stored client shadows a
 * file client of the same id.
 */
export class ClientRegistry {
  private readonly fromFile = new Map<string, Client>()

  constructor (private readonly store: ClientStore) {}

  /** Reads AUTH_CLIENTS_FILE; a plain secret is hashed with `hash`. Fails start-up on any bad entry. */
  async load (file: string | undefined, log: Logger, hash: (secret: string) => Promise<string>): Promise<void> {
    if (!file) return
    for (const e of readJsonFile<FileEntry[]>('AUTH_CLIENTS_FILE', file, fileSchema)) {
      const problem = clientIdentityProblem(e.client_id, e.tenant)
      if (problem !== undefined) throw new ConfigError(`AUTH_CLIENTS_FILE ${file}: ${problem} (docs/identifiers.md)`)
      let secretHash = e.client_secret_hash
      if (secretHash !== undefined && !isSecretHash(secretHash)) throw new ConfigError(`AUTH_CLIENTS_FILE ${file}: client ${e.client_id} has a malformed client_secret_hash`)
      // Hashed with a fresh salt by each process: its hash names no credential that workers or restarts share.
      const plain = secretHash === undefined ? { generation: 'file' } : {}
      if (secretHash === undefined) {
        log.warn({ client_id: e.client_id }, 'AUTH_CLIENTS_FILE holds a plain client_secret; use client_secret_hash outside development')
        secretHash = await hash(e.client_secret!)
      }
      this.fromFile.set(e.client_id, { client_id: e.client_id, client_secret_hash: secretHash, audiences: e.audiences, scopes: e.scopes, tenant: e.tenant ?? e.client_id, ...plain })
    }
  }

  /** The client, or undefined; an id outside the grammar names no client (and is no key in the store). */
  async get (clientId: string): Promise<Client | undefined> {
    if (!isStorageId(clientId)) return undefined
    return await this.store.get(clientId) ?? this.fromFile.get(clientId)
  }

  async list (): Promise<Client[]> {
    const stored = await this.store.list()
    const ids = new Set(stored.map(c => c.client_id))
    return [...stored, ...[...this.fromFile.values()].filter(c => !ids.has(c.client_id))]
  }

  async put (client: Client): Promise<void> {
    const problem = clientIdentityProblem(client.client_id, client.tenant)
    if (problem !== undefined) throw new Error(problem)
    // A stored client's generation is its secret hash's (a file client's fixed one would outlive a rotation).
    const { generation: _, ...stored } = client
    await this.store.put(stored)
  }

  /** False when the client is not in the store (file clients are changed in their file). */
  async remove (clientId: string): Promise<boolean> {
    if (!isStorageId(clientId)) return false
    return this.store.remove(clientId)
  }
}
