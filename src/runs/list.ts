import type { Database } from 'lmdb'
import { GatewayError } from '../errors.js'
import type { StateStore } from '../state/index.js'
import { isStorageId } from '../validation/index.js'
import { IN_FLIGHT, TERMINAL, type RunRecord, type RunStatus } from './types.js'

export const LIST_DEFAULT_LIMIT = 50
export const LIST_MAX_LIMIT = 200
/**
 * Index entries one page may look at when `status` or `mode` filters them:
 * past it the page ends short, with a cursor to go on from, so a filter that
 * matches few of a tenant's many runs never holds the event loop for long.
 */
export const LIST_SCAN_BUDGET = 1000

/**
 * Characters of a run's `message` and `answer` (and of `result` and the
 * error's message, as JSON) a list item carries; past them the item says
 * `truncated: true` and `GET /runs/{id}` has the whole record. A page of 200
 * records with 64 KiB messages was 236 MB; cut, it stays under about 1 MB.
 */
export const LIST_TEXT_MAX = 1024

/** A record as a list item: the large fields cut to LIST_TEXT_MAX. */
export function listItem (record: RunRecord): RunRecord & { truncated?: true } {
  let truncated = false
  const cut = (text: string): string => {
    if (text.length <= LIST_TEXT_MAX) return text
    truncated = true
    return text.slice(0, LIST_TEXT_MAX)
  }
  const message = cut(record.message)
  const answer = record.answer === null ? null : cut(record.answer)
  const bigResult = record.result !== null && record.result !== undefined && JSON.stringify(record.result).length > LIST_TEXT_MAX
  const error = record.error === null ? null : { ...record.error, message: cut(record.error.message) }
  if (bigResult) truncated = true
  if (!truncated) return record
  return { ...record, message, answer, result: bigResult ? null : record.result, error, truncated: true }
}

/** Above every run id (`run-` and lower-case hex), below nothing a run id could be. */
const TOP = 'run-~'
const BOTTOM = 'run-'
const STATUSES: readonly string[] = [...IN_FLIGHT, ...TERMINAL]

type IndexKey = [string, string]

export interface ListQuery {
  status: ReadonlySet<RunStatus> | undefined
  mode: ReadonlySet<string> | undefined
  /** Lowest run id (inclusive): the `since` time as a run id prefix. */
  lower: string
  /** Run ids strictly below this: the cursor's, or the `until` time's prefix. */
  upper: string
  limit: number
}

export interface RunPage {
  runs: RunRecord[]
  next_cursor: string | null
}

const bad = (detail: string): GatewayError => new GatewayError('validation_error', detail)

/**
 * The query of `GET /runs`: `status` and `mode` (comma-separated lists),
 * `since` (inclusive) and `until` (exclusive) as RFC 3339 times, `limit`
 * (1 to LIST_MAX_LIMIT) and `cursor` (a page's `next_cursor`). Each bad
 * value is a 400 naming it; an unknown parameter is ignored, as the other
 * routes ignore fields they do not read.
 */
export function parseListQuery (query: string, knownMode: (m: string) => boolean): ListQuery {
  const params = new URLSearchParams(query)
  const list = (name: string): string[] | undefined => {
    const all = params.getAll(name)
    if (all.length > 1) throw bad(`${name} is given more than once`)
    return all[0]?.split(',').map(s => s.trim())
  }
  const statuses = list('status')
  if (statuses?.some(s => !STATUSES.includes(s))) throw bad(`status must be a comma-separated list of ${STATUSES.join(', ')}`)
  const modes = list('mode')
  if (modes?.some(m => !knownMode(m))) throw bad('mode names an unknown mode')
  const limitText = params.get('limit')
  const limit = limitText === null ? LIST_DEFAULT_LIMIT : Number(limitText)
  if (!/^\d{1,4}$/.test(limitText ?? '0') || !Number.isInteger(limit) || limit < 1 || limit > LIST_MAX_LIMIT) throw bad(`limit must be an integer from 1 to ${LIST_MAX_LIMIT}`)
  const since = time(params.get('since'), 'since')
  const until = time(params.get('until'), 'until')
  let upper = until === undefined ? TOP : idPrefix(until)
  const cursor = params.get('cursor')
  if (cursor !== null) {
    const after = decodeCursor(cursor)
    if (after < upper) upper = after
  }
  return {
    status: statuses && new Set(statuses as RunStatus[]),
    mode: modes && new Set(modes),
    lower: since === undefined ? BOTTOM : idPrefix(since),
    upper,
    limit
  }
}

function time (text: string | null, name: string): number | undefined {
  if (text === null) return undefined
  const ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i.test(text) ? Date.parse(text) : NaN
  if (!Number.isFinite(ms) || ms < 0 || ms >= 2 ** 48) throw bad(`${name} must be an RFC 3339 date-time`)
  return ms
}

/** Run ids are `run-` + a UUIDv7, whose first 48 bits are the creation time: every run of `ms` or later sorts at or after this. */
function idPrefix (ms: number): string {
  const hex = ms.toString(16).padStart(12, '0')
  return `run-${hex.slice(0, 8)}-${hex.slice(8)}`
}

export function encodeCursor (runId: string): string {
  return Buffer.from(runId).toString('base64url')
}

export function decodeCursor (cursor: string): string {
  const id = /^[A-Za-z0-9_-]{1,200}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : ''
  if (!id.startsWith(BOTTOM) || !isStorageId(id)) throw bad('cursor is not a next_cursor of this list')
  return id
}

/**
 * `runs-by-tenant-v1`: (tenant, run_id) for every run, written by the store
 * with the run's first event and removed with the run, so a tenant's runs
 * are listed newest first by reading its own keys backwards, however many
 * runs other tenants have.
 */
export class RunIndex {
  private readonly db: Database<string, IndexKey>

  constructor (state: StateStore) {
    this.db = state.openDB<string, IndexKey>({ name: 'runs-by-tenant-v1', encoding: 'string' })
  }

  /**
   * A page of the tenant's runs, newest first. `get` reads a run's current
   * record (undefined for one retention has just removed, or one this
   * process does not serve).
   */
  page (tenant: string, q: ListQuery, get: (runId: string) => RunRecord | undefined): RunPage {
    const filtered = q.status !== undefined || q.mode !== undefined
    const runs: RunRecord[] = []
    let scanned = 0
    let last: string | undefined
    for (const [, runId] of this.db.getKeys({ start: [tenant, q.upper], end: [tenant, q.lower], reverse: true })) {
      if (runId >= q.upper) continue
      if (runs.length === q.limit || (filtered && scanned === LIST_SCAN_BUDGET)) return { runs, next_cursor: encodeCursor(last!) }
      scanned++
      last = runId
      const record = get(runId)
      if (record === undefined) continue
      if (q.status !== undefined && !q.status.has(record.status)) continue
      if (q.mode !== undefined && !q.mode.has(record.mode)) continue
      runs.push(listItem(record))
    }
    return { runs, next_cursor: null }
  }
}
