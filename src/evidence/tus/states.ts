import { randomUUID } from 'node:crypto'
import type { Database, RootDatabase } from 'lmdb'
import type { SharedDocuments } from '../../cluster/index.js'
import type { UploadRecord, UploadStates, Versioned } from './record.js'

interface Stored { record: UploadRecord, version: string, written_at: number }

/**
 * One node (or the workers of one DATA_DIR): LMDB, a read and its write in
 * one transaction, so a replace on a stale version fails as in S3.
 */
export class LocalUploadStates implements UploadStates {
  readonly shared = false
  private readonly db: Database<Stored, string>

  constructor (private readonly state: RootDatabase) {
    this.db = state.openDB<Stored, string>({ name: 'evidence-resumable-uploads' })
  }

  async get (tenant: string, id: string): Promise<Versioned | undefined> {
    const found = this.db.get(key(tenant, id))
    return found === undefined ? undefined : { record: found.record, version: found.version }
  }

  async create (record: UploadRecord): Promise<string> {
    const version = randomUUID()
    const made = await this.db.ifNoExists(key(record.tenant, record.id), () => {
      this.db.put(key(record.tenant, record.id), { record, version, written_at: Date.now() })
    })
    if (!made) throw new Error(`upload ${record.id} exists`)
    return version
  }

  replace (record: UploadRecord, version: string): Promise<string | undefined> {
    const k = key(record.tenant, record.id)
    return this.state.transaction(() => {
      if (this.db.get(k)?.version !== version) return undefined
      const next = randomUUID()
      this.db.put(k, { record, version: next, written_at: Date.now() })
      return next
    })
  }

  async delete (tenant: string, id: string): Promise<void> {
    await this.db.remove(key(tenant, id))
  }

  async list (tenant?: string, pick: (id: string) => boolean = () => true): Promise<Versioned[]> {
    const range = tenant === undefined ? {} : { start: `${tenant}\u0000`, end: `${tenant}\u0001` }
    return [...this.db.getRange(range)].filter(({ value }) => pick(value.record.id)).map(({ value }) => ({ record: value.record, version: value.version }))
  }

  async ageMs (tenant: string, id: string): Promise<number | undefined> {
    const found = this.db.get(key(tenant, id))
    return found === undefined ? undefined : Date.now() - found.written_at
  }
}

function key (tenant: string, id: string): string {
  return `${tenant}\u0000${id}`
}

const PREFIX = 'uploads/'
const READS_AT_ONCE = 16

/**
 * A cluster: `_gateway/uploads/<tenant>/<id>.json`, replaced with `If-Match`
 * on the version read, so whichever node takes the next request writes on
 * what the last one wrote, or fails.
 */
export class SharedUploadStates implements UploadStates {
  readonly shared = true
  constructor (private readonly documents: SharedDocuments) {}

  async get (tenant: string, id: string): Promise<Versioned | undefined> {
    const found = await this.documents.get<UploadRecord>(path(tenant, id))
    return found === undefined ? undefined : { record: found.value, version: found.etag }
  }

  async create (record: UploadRecord): Promise<string> {
    const etag = await this.documents.create(path(record.tenant, record.id), record)
    if (etag === undefined) throw new Error(`upload ${record.id} exists`)
    return etag
  }

  replace (record: UploadRecord, version: string): Promise<string | undefined> {
    return this.documents.replace(path(record.tenant, record.id), record, version)
  }

  delete (tenant: string, id: string): Promise<void> {
    return this.documents.delete(path(tenant, id))
  }

  async list (tenant?: string, pick: (id: string) => boolean = () => true): Promise<Versioned[]> {
    const listed = (await this.documents.list(tenant === undefined ? PREFIX : `${PREFIX}${tenant}/`))
      .filter(l => pick(l.key.slice(l.key.lastIndexOf('/') + 1, -'.json'.length)))
    const out: Versioned[] = []
    // A few reads at a time: after an outage the sweep may find thousands.
    for (let i = 0; i < listed.length; i += READS_AT_ONCE) {
      const found = await Promise.all(listed.slice(i, i + READS_AT_ONCE).map(l => this.documents.get<UploadRecord>(l.key)))
      for (const f of found) if (f !== undefined) out.push({ record: f.value, version: f.etag })
    }
    return out
  }

  ageMs (tenant: string, id: string): Promise<number | undefined> {
    return this.documents.age(path(tenant, id))
  }
}

function path (tenant: string, id: string): string {
  return `${PREFIX}${tenant}/${id}.json`
}
