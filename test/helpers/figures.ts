import { appendFileSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Where the fault and attack suites leave what they counted, one JSON line
 * per scenario: `node scripts/reliability-table.mjs` turns the last run into
 * the tables of docs/reliability.md. The counts are figures of a run, never
 * assertions: each test asserts its own promise.
 */
const FILE = process.env.RELIABILITY_FIGURES ??
  join(dirname(fileURLToPath(import.meta.url)), '..', '..', '.reliability', 'figures.jsonl')

export type Figures = Record<string, number | string>

export function recordFigures (suite: string, scenario: string, figures: Figures): void {
  mkdirSync(dirname(FILE), { recursive: true })
  appendFileSync(FILE, JSON.stringify({ suite, scenario, at: new Date().toISOString(), ...figures }) + '\n')
}
