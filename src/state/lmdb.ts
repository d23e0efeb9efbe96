import { mkdirSync } from 'node:fs'
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
  mkdirSync(dataDir, { recursive: true })
  return open({ path: join(dataDir, 'state.lmdb'), ...STATE_OPTIONS })
}

/** Readiness probe: a read and a no-op write transaction. */
export async function checkState (state: StateStore): Promise<void> {
  state.getStats()
  await state.transaction(() => undefined)
}
