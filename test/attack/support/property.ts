import fc from 'fast-check'
import { errorShapeProblem, type Dialect } from './shapes.js'
import type { Outcome, RawRequest } from './wire.js'

/**
 * How the suite runs fast-check: one seed per process, printed, taken from
 * ATTACK_SEED when set, so a failure is replayed with the same inputs
 * (fast-check also prints the path of the shrunk case: ATTACK_PATH replays
 * exactly that one). Each property's numRuns is fixed in its file and
 * scaled by ATTACK_RUNS_SCALE (default 1; `npm run test:faults` raises it).
 */
export const SEED = process.env['ATTACK_SEED'] !== undefined ? Number(process.env['ATTACK_SEED']) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0
const SCALE = Number(process.env['ATTACK_RUNS_SCALE'] ?? 1)
const PATH = process.env['ATTACK_PATH']

export function seedLine (file: string): string {
  return `attack seed ${SEED} for ${file} (replay with ATTACK_SEED=${SEED})`
}

export function params (numRuns: number): fc.Parameters<unknown> {
  return {
    seed: SEED,
    numRuns: Math.max(1, Math.round(numRuns * SCALE)),
    ...(PATH !== undefined ? { path: PATH } : {}),
    // Shrinking a case that hangs costs a bound per try: stop it, keep the best case so far.
    interruptAfterTimeLimit: 240_000,
    markInterruptAsFailure: true,
    endOnFailure: false
  }
}

/** How a route answers: its error dialect and the success statuses it may give. */
export interface RouteRule {
  dialect: Dialect
  ok: readonly number[]
  /** A 401 on ingest carries `WWW-Authenticate: Bearer`. */
  bearerChallenge?: boolean
}

/**
 * Why `outcome` breaks the suite's rule for `rule` (never a 5xx, a hang, a
 * close without an answer, a success outside the route's, or an error body
 * outside the route's dialect), or undefined when it keeps it.
 */
export function judge (rule: RouteRule, outcome: Outcome): string | undefined {
  if (outcome.kind !== 'answer') return `${outcome.kind === 'hang' ? 'no answer within the bound' : 'closed without an answer'} (got: ${JSON.stringify(outcome.partial)})`
  const { status } = outcome
  if (status >= 500) return `a ${status}: ${outcome.text.slice(0, 300)}`
  if (status >= 200 && status < 300) return rule.ok.includes(status) ? undefined : `a ${status}, not one of ${rule.ok.join('/')}: ${outcome.text.slice(0, 200)}`
  if (status < 400) return `a ${status}`
  const shape = errorShapeProblem(rule.dialect, outcome)
  if (shape !== undefined) return `${status} in the wrong shape for ${rule.dialect}: ${shape}: ${outcome.text.slice(0, 300)}`
  if (status === 401 && rule.bearerChallenge === true && !/^Bearer/.test(outcome.headers['www-authenticate'] ?? '')) return '401 without WWW-Authenticate: Bearer'
  return undefined
}

/** The figures a file prints at its end, one line (docs/reliability.md reads it). */
export class Tally {
  sent = 0
  acknowledged = 0
  refused = 0
  badInputs = 0
  downstream = 0
  duplicates = 0
  faults = 0
  serverErrors = 0
  hangs = 0
  crashes = 0
  leftInStorage = 0

  constructor (private readonly name: string) {}

  /** One answer; `acknowledged` counts the route's successes. */
  count (outcome: Outcome): void {
    this.sent++
    if (outcome.kind !== 'answer') { this.hangs++; return }
    if (outcome.status >= 500) this.serverErrors++
    else if (outcome.status >= 400) this.refused++
    else if (outcome.status >= 200 && outcome.status < 300) this.acknowledged++
  }

  line (): string {
    const f = { sent: this.sent, acknowledged: this.acknowledged, downstream: this.downstream, duplicates: this.duplicates, faults: this.faults, bad_inputs: this.badInputs, refused: this.refused, '5xx': this.serverErrors, hangs: this.hangs, crashes: this.crashes, left_in_storage: this.leftInStorage }
    return `# reliability ${this.name}: ${Object.entries(f).map(([k, v]) => `${k}=${v}`).join(' ')}`
  }
}

/** A short description of a request for a failure message. */
export function describe (req: RawRequest): string {
  const body = req.body === undefined ? '' : ` body(${Buffer.byteLength(req.body)}B)=${JSON.stringify(Buffer.from(req.body).subarray(0, 300).toString('latin1'))}`
  return `${req.method} ${req.target.slice(0, 200)} headers=${JSON.stringify((req.headers ?? []).map(([n, v]) => [n, String(v).slice(0, 80)]))}${body}`
}
