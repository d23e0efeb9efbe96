import type { JWK } from 'jose'
import type { Database } from 'lmdb'
import type { SharedDocuments } from '../cluster/index.js'
import type { StateStore } from '../state/index.js'

export interface StoredKey {
  kid: string
  /**
   * The rotation epoch the key was made for, counting up from 1: one key per
   * epoch, the first written wins. Absent in keys of earlier versions.
   */
  epoch?: number
  created_at: number
  /** Written by earlier versions; retirement now follows from the next epoch's key. */
  retired_at?: number
  /** PKCS#8 PEM; empty when the key is wrapped. */
  private_pem: string
  /** The PEM wrapped with AUTH_KEY_WRAP_FILE's key (key-wrap.ts). */
  private_wrapped?: string
  public_jwk: JWK
}

/** A stored key as the vault lists it. */
export interface ListedKey extends StoredKey {
  /** When the key was written, epoch ms on the vault's clock (S3's `Last-Modified` in a cluster). */
  published_at: number
}

export interface KeyListing {
  /** Every stored key, oldest first. */
  keys: ListedKey[]
  /** The vault's clock when it answered (S3's `Date` in a cluster): what `published_at` compares with. */
  now: number
}

/**
 * Where the signing keys are kept: LMDB on a single node, S3 in a cluster.
 * Every process sharing it decides from the listing alone, on the vault's
 * clock, which key signs and which are due or expired, so all decide alike.
 */
export interface KeyVault {
  list(): Promise<KeyListing>
  /** Stores `key` unless a key of its epoch exists (another process rotated first); true when stored. */
  create(key: StoredKey & { epoch: number }): Promise<boolean>
  remove(key: StoredKey): Promise<void>
}

/** Oldest first: by epoch (keys of earlier versions, without one, first), then by age. */
export function byEpoch<K extends StoredKey> (keys: K[]): K[] {
  return keys.sort((a, b) => (a.epoch ?? 0) - (b.epoch ?? 0) || a.created_at - b.created_at)
}

/**
 * The keys in this node's LMDB (`auth-keys`), shared by the processes on
 * DATA_DIR, which share this machine's clock: a key's `created_at` is when
 * it was published, and `clock` is the vault's.
 */
export class LmdbKeyVault implements KeyVault {
  private readonly db: Database<StoredKey, string>

  constructor (private readonly state: StateStore, private readonly clock: () => number = Date.now) {
    this.db = state.openDB<StoredKey, string>({ name: 'auth-keys' })
  }

  async list (): Promise<KeyListing> {
    return { keys: byEpoch([...this.db.getRange()].map(e => ({ ...e.value, published_at: e.value.created_at }))), now: this.clock() }
  }

  async create (key: StoredKey & { epoch: number }): Promise<boolean> {
    return this.state.transaction(() => {
      for (const { value } of this.db.getRange()) if (value.epoch === key.epoch) return false
      this.db.put(key.kid, key)
      return true
    })
  }

  async remove (key: StoredKey): Promise<void> {
    await this.db.remove(key.kid)
  }
}

const PREFIX = 'auth/keys/'

/**
 * The keys of a cluster: `_gateway/auth/keys/<epoch>.json` in S3, created
 * with `If-None-Match: *`, so of the nodes that find a key due at once one
 * writes the next epoch's key and the others adopt it. The epoch is
 * zero-padded so that listing order is epoch order. Times are S3's: a key's
 * `Last-Modified` and the listing's `Date`, never a node's own clock.
 */
export class SharedKeyVault implements KeyVault {
  /** Keys read before, by document and version: a look every few seconds costs one listing. */
  private readonly read = new Map<string, { etag: string, key: StoredKey }>()

  constructor (private readonly documents: SharedDocuments) {}

  async list (): Promise<KeyListing> {
    const keys: ListedKey[] = []
    const { listed, now } = await this.documents.listAt(PREFIX)
    for (const { key, etag, lastModified } of listed) {
      let known = this.read.get(key)
      if (known?.etag !== etag) {
        const found = await this.documents.get<StoredKey>(key)
        known = found === undefined ? undefined : { etag: found.etag, key: found.value }
        if (known === undefined) this.read.delete(key)
        else this.read.set(key, known)
      }
      if (known !== undefined) keys.push({ ...known.key, published_at: lastModified })
    }
    for (const key of this.read.keys()) if (!listed.some(l => l.key === key)) this.read.delete(key)
    return { keys: byEpoch(keys), now }
  }

  async create (key: StoredKey & { epoch: number }): Promise<boolean> {
    return await this.documents.create(this.path(key.epoch), key) !== undefined
  }

  /** Unconditional: every node prunes the same keys, by the same rule. */
  async remove (key: StoredKey): Promise<void> {
    if (key.epoch !== undefined) await this.documents.delete(this.path(key.epoch))
  }

  private path (epoch: number): string {
    return `${PREFIX}${String(epoch).padStart(12, '0')}.json`
  }
}
