import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { open, type RootDatabase } from 'lmdb'

export type StateStore = RootDatabase

/**
 * The LMDB environment under DATA_DIR. One environment for every capability
 * (each opens its own named database in it), so a single write transaction can
 * span, say, an idempotency record and its outbox entry. LMDB is safe across
 * processes, which is what lets roles run split.
 */
export function openState (dataDir: string): StateStore {
  mkdirSync(dataDir, { recursive: true })
  return open({ path: join(dataDir, 'state.lmdb'), maxDbs: 32, mapSize: 16 * 1024 ** 3, compression: false })
}

/** Readiness probe: a read and a no-op write transaction. */
export async function checkState (state: StateStore): Promise<void> {
  state.getStats()
  await state.transaction(() => undefined)
}
