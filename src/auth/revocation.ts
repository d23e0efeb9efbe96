import { createHash } from 'node:crypto'
import { unauthorized } from '../errors.js'
import type { Client } from './client-store.js'

/**
 * How long a process believes what it read of a client's credential
 * generation: a client removed or rotated is refused this long after the
 * store says so at most (in a cluster, add CLIENT_CACHE_MS of the shared
 * store's own cache). A fleet's requests cost one read per client per
 * period, whatever their rate.
 */
export const CREDENTIAL_CHECK_MS = 2_000
/** Clients remembered at most; only verified tokens look, so the ids are real ones. */
const CACHE_SIZE = 10_000

/** The `gen` claim of a token: names the credential (secret) it was issued for. */
export const GENERATION_CLAIM = 'gen'

/**
 * A client's credential generation: 96 bits of a hash of its secret's hash,
 * which changes when `gateway clients rotate` (or re-adding the id) gives it
 * a new secret, and names neither. A client of AUTH_CLIENTS_FILE with a
 * plain secret is hashed afresh by every process at start, so its
 * generation is fixed (`file`): it is revoked by leaving the file.
 */
export function credentialGeneration (client: Client): string {
  if (client.generation !== undefined) return client.generation
  return createHash('sha256').update(client.client_secret_hash).digest('base64url').slice(0, 16)
}

/**
 * Refuses tokens of a client that is gone, or whose secret changed since
 * the token was issued: each token carries its client's generation, and
 * the check compares it with the store's (LMDB, shared by a node's
 * processes and workers; S3 in a cluster), cached CREDENTIAL_CHECK_MS.
 */
export class Revocation {
  private readonly cache = new Map<string, { generation: string | undefined, until: number }>()
  private readonly reading = new Map<string, Promise<string | undefined>>()

  constructor (
    private readonly lookup: (clientId: string) => Promise<Client | undefined>,
    private readonly ttlMs = CREDENTIAL_CHECK_MS,
    // A duration, on a clock that never steps.
    private readonly now: () => number = () => performance.now()
  ) {}

  /**
   * Nothing when a token with these claims may still be used, else throws
   * 401. Synchronous when the client's generation is cached. A token
   * without a generation (issued before tokens carried one) lives out its
   * lifetime.
   */
  check (claims: { client_id?: unknown, sub?: unknown, [GENERATION_CLAIM]?: unknown }): void | Promise<void> {
    const generation = claims[GENERATION_CLAIM]
    if (generation === undefined) return
    const clientId = typeof claims.client_id === 'string' ? claims.client_id : claims.sub
    if (typeof clientId !== 'string' || typeof generation !== 'string') throw unauthorized('auth_failed:revoked')
    const current = this.generation(clientId)
    if (current instanceof Promise) return current.then(c => same(c, generation))
    same(current, generation)
  }

  private generation (clientId: string): string | undefined | Promise<string | undefined> {
    const cached = this.cache.get(clientId)
    if (cached !== undefined && cached.until > this.now()) return cached.generation
    let read = this.reading.get(clientId)
    if (read === undefined) {
      read = this.lookup(clientId).then(client => {
        const generation = client === undefined ? undefined : credentialGeneration(client)
        this.cache.delete(clientId)
        if (this.cache.size >= CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!)
        this.cache.set(clientId, { generation, until: this.now() + this.ttlMs })
        return generation
      }).finally(() => this.reading.delete(clientId))
      this.reading.set(clientId, read)
    }
    return read
  }
}

function same (current: string | undefined, generation: string): void {
  if (current !== generation) throw unauthorized('auth_failed:revoked')
}
