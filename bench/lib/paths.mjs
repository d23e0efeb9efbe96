// Where the bench and the repository it measures are.
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)))
export const REPO_DIR = dirname(BENCH_DIR)
