import type { Database } from 'lmdb'
import type { SharedDocuments } from '../cluster/index.js'
import type { StateStore } from '../state/index.js'

export interface Client {
  readonly client_id: string
  readonly client_secret_hash: string
  readonly audiences: readonly string[]
  readonly scopes: readonly string[]
  readonly tenant: string
  readonly created_at?: string
  /** Set only where the secret hash cannot name the credential (revocation.ts); never stored. */
  readonly generation?: string
}

/**
 * Where `gateway clients` writes clients and login reads them: LMDB on a
 * single node, S3 in a cluster. Ids given here are storage identifiers
 * (ClientRegistry checks), so they are safe as keys in either.
 */
export interface ClientStore {
  get(clientId: string): Promise<Client | undefined>
  list(): Promise<Client[]>
  put(client: Client): Promise<void>
  /** False when there was no such client. */
  remove(clientId: string): Promise<boolean>
}

/** `auth-clients` in this node's LMDB: read on every login, so a change is seen at once. */
export class LmdbClientStore implements ClientStore {
  private readonly db: Database<Client, string>

  constructor (state: StateStore) {
    this.db = state.openDB<Client, string>({ name: 'auth-clients' })
  }

  async get (clientId: string): Promise<Client | undefined> {
    return this.db.get(clientId)
  }

  async list (): Promise<Client[]> {
    return [...this.db.getRange()].map(e => e.value)
  }

  async put (client: Client): Promise<void> {
    await this.db.put(client.client_id, client)
  }

  async remove (clientId: string): Promise<boolean> {
    if (this.db.get(clientId) === undefined) return false
    return this.db.remove(clientId)
  }
}

/** How long a node believes what it read of a client (or of its absence). */
export const CLIENT_CACHE_MS = 5_000
/** Lookups remembered at most: made-up client_ids cannot grow memory. */
const CLIENT_CACHE_SIZE = 10_000
const PREFIX = 'auth/clients/'

/**
 * The clients of a cluster: `_gateway/auth/clients/<client_id>.json` in S3.
 * Each node remembers a lookup, found or not, for CLIENT_CACHE_MS, so a
 * fleet logging in costs S3 one read per client per node every few seconds,
 * and a client added, rotated or removed on any node is seen by every node
 * within that time.
 */
export class SharedClientStore implements ClientStore {
  private readonly cache = new Map<string, { client: Client | undefined, until: number }>()
  private readonly reading = new Map<string, Promise<Client | undefined>>()

  // A cache lifetime is a duration: on the wall clock, one set back an hour
  // would have kept a removed client able to log in on this node for that hour.
  constructor (private readonly documents: SharedDocuments, private readonly now: () => number = () => performance.now()) {}

  async get (clientId: string): Promise<Client | undefined> {
    const cached = this.cache.get(clientId)
    if (cached !== undefined && cached.until > this.now()) return cached.client
    let read = this.reading.get(clientId)
    if (read === undefined) {
      read = this.documents.get<Client>(this.path(clientId)).then(found => {
        this.remember(clientId, found?.value)
        return found?.value
      }).finally(() => this.reading.delete(clientId))
      this.reading.set(clientId, read)
    }
    return read
  }

  async list (): Promise<Client[]> {
    const out: Client[] = []
    for (const { key } of await this.documents.list(PREFIX)) {
      const found = await this.documents.get<Client>(key)
      if (found !== undefined) out.push(found.value)
    }
    return out
  }

  async put (client: Client): Promise<void> {
    await this.documents.put(this.path(client.client_id), client)
    this.cache.delete(client.client_id)
  }

  async remove (clientId: string): Promise<boolean> {
    const found = await this.documents.get<Client>(this.path(clientId))
    if (found === undefined) return false
    await this.documents.delete(this.path(clientId))
    this.cache.delete(clientId)
    return true
  }

  private remember (clientId: string, client: Client | undefined): void {
    if (this.cache.size >= CLIENT_CACHE_SIZE && !this.cache.has(clientId)) this.cache.delete(this.cache.keys().next().value!)
    this.cache.set(clientId, { client, until: this.now() + CLIENT_CACHE_MS })
  }

  private path (clientId: string): string {
    return `${PREFIX}${clientId}.json`
  }
}
