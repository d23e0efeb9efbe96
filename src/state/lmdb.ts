import { chmodSync, mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { open, type RootDatabase } from 'lmdb'

export type StateStore = RootDatabase

/**
 * lmdb-js's `overlappingSync` (its default off Windows) flushes a commit
 * after releasing the write lock. With several processes writing one
 * environment, that loses commits: a transaction can start from a meta page
 * a late flush has just rewritten, and its commit then replaces the one it
 * never saw (4 processes appending to the local bus lost a batch in 5 of 40
 * tries), or a committer can spin in `mdb_txn_commit` for good. DATA_DIR is
 * shared by the service's workers, its split roles and the CLI, so every
 * commit is flushed inside its transaction: a resolved write is on disk.
 * (The first process to open an environment sets this for all of them.)
 */
export const STATE_OPTIONS = { maxDbs: 32, mapSize: 16 * 1024 ** 3, compression: false, overlappingSync: false } as const

/**
 * The LMDB environment under DATA_DIR. One environment for every capability
 * (each opens its own named database in it), so a single write transaction can
 * span, say, an idempotency record and its outbox entry. LMDB is safe across
 * processes, which is what lets roles run split.
 */
export function openState (dataDir: string): StateStore {
  makePrivate(dataDir)
  const path = join(dataDir, 'state.lmdb')
  const state = open({ path, ...STATE_OPTIONS })
  // Written 0644 by versions before this one (the umask's doing).
  for (const file of [path, `${path}-lock`]) chmodPrivate(file, 0o600)
  return state
}

/**
 * DATA_DIR holds the signing keys, the clients' secret hashes, every run and
 * the stored media: no other user of the machine may read any of it. From
 * here on this process creates files 0600 and folders 0700 whatever umask
 * it was started with, and DATA_DIR itself is 0700, which also closes
 * whatever an earlier version left readable inside it. A DATA_DIR this
 * user cannot chmod (a volume another user owns) is accepted only if
 * other users cannot enter it; a group (Kubernetes' fsGroup) is the
 * operator's choice.
 */
function makePrivate (dataDir: string): void {
  process.umask(0o077)
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  if (!chmodPrivate(dataDir, 0o700) && (statSync(dataDir).mode & 0o007) !== 0) {
    throw new Error(`DATA_DIR ${dataDir} is open to other users (mode ${(statSync(dataDir).mode & 0o777).toString(8)}) and not this user's to chmod 0700`)
  }
}

/** chmod, false when the file is not this user's to change. */
function chmodPrivate (path: string, mode: number): boolean {
  try {
    chmodSync(path, mode)
    return true
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EPERM' || code === 'ENOENT') return false
    throw err
  }
}

/** Readiness probe: a read and a no-op write transaction. */
export async function checkState (state: StateStore): Promise<void> {
  state.getStats()
  await state.transaction(() => undefined)
}
