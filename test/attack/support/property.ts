import fc from 'fast-check'
import { recordFigures } from '../../helpers/figures.js'
import { NEWER_UWS } from '../../helpers/http.js'
import { errorShapeProblem, type Dialect } from './shapes.js'
import type { Outcome, RawRequest } from './wire.js'

/**
 * How the suite runs fast-check: one seed per process, printed, taken from
 * ATTACK_SEED when set, so a failure is replayed with the same inputs
 * (fast-check also prints the path of the shrunk case: ATTACK_PATH replays
 * exactly that one). Each property's numRuns is fixed in its file and
 * scaled by ATTACK_RUNS (a factor, default 1: ATTACK_RUNS=20 for a deep run).
 */
export const SEED = process.env['ATTACK_SEED'] !== undefined ? Number(process.env['ATTACK_SEED']) : (Date.now() ^ (Math.random() * 0x7fffffff)) | 0
const SCALE = Number(process.env['ATTACK_RUNS'] ?? 1)
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
 * A refusal of uWS 20.57's own, before any route (docs/http.md): a header
 * block past 4096 bytes is 431, with uWS's HTML page and a close, where
 * 20.30 lets a block that came in one read through to the gateway's 431.
 */
const UWS_REFUSAL = /^<h1>[^<]+<\/h1><hr><i>uWebSockets\/20 Server<\/i>\n?$/
const refusedByUws = (outcome: Outcome & { kind: 'answer' }): boolean =>
  NEWER_UWS && outcome.status >= 400 && outcome.status < 500 && outcome.headers['connection'] === 'close' && UWS_REFUSAL.test(outcome.text)

/**
 * Why `outcome` breaks the suite's rule for `rule` (never a 5xx, a hang, a
 * close without an answer, a success outside the route's, or an error body
 * outside the route's dialect, unless uWS refused the request itself), or
 * undefined when it keeps it.
 */
export function judge (rule: RouteRule, outcome: Outcome): string | undefined {
  if (outcome.kind !== 'answer') return `${outcome.kind === 'hang' ? 'no answer within the bound' : 'closed without an answer'} (got: ${JSON.stringify(outcome.partial)})`
  if (refusedByUws(outcome)) return undefined
  const { status } = outcome
  if (status >= 500) return `a ${status}: ${outcome.text.slice(0, 300)}`
  if (status >= 200 && status < 300) return rule.ok.includes(status) ? undefined : `a ${status}, not one of ${rule.ok.join('/')}: ${outcome.text.slice(0, 200)}`
  if (status < 400) return `a ${status}`
  const shape = errorShapeProblem(rule.dialect, outcome)
  if (shape !== undefined) return `${status} in the wrong shape for ${rule.dialect}: ${shape}: ${outcome.text.slice(0, 300)}`
  if (status === 401 && rule.bearerChallenge === true && !/^Bearer/.test(outcome.headers['www-authenticate'] ?? '')) return '401 without WWW-Authenticate: Bearer'
  return undefined
}

/**
 * What a file tried and how it was answered, written at its end with
 * recordFigures (docs/reliability.md, "Attack suite", prints the last run).
 * The figures describe a run; the tests assert the promises themselves.
 */
export class Tally {
  inputsTried = 0
  answered2xx = 0
  answered4xx = 0
  answered5xx = 0
  hangs = 0
  crashes = 0
  /** Published messages or stored objects no acknowledged request accounts for. */
  storedAfterRefusal = 0

  constructor (private readonly scenario: string) {}

  /** One answer (or its absence); `newInput` false for the answer to an input already counted. */
  count (outcome: Outcome, newInput = true): void {
    if (newInput) this.inputsTried++
    if (outcome.kind !== 'answer') { this.hangs++; return }
    if (outcome.status >= 500) this.answered5xx++
    else if (outcome.status >= 400) this.answered4xx++
    else if (outcome.status >= 200 && outcome.status < 300) this.answered2xx++
  }

  /** Why the gateway is not alive (counted as a crash), or undefined. */
  async survived (target: { alive(): Promise<string | undefined> }): Promise<string | undefined> {
    const reason = await target.alive()
    if (reason !== undefined) this.crashes++
    return reason
  }

  record (): void {
    recordFigures('attack', this.scenario, {
      inputs_tried: this.inputsTried,
      answered_4xx: this.answered4xx,
      answered_2xx: this.answered2xx,
      answered_5xx: this.answered5xx,
      hangs: this.hangs,
      crashes: this.crashes,
      stored_or_published_after_refusal: this.storedAfterRefusal
    })
  }
}

/** A short description of a request for a failure message. */
export function describe (req: RawRequest): string {
  const body = req.body === undefined ? '' : ` body(${Buffer.byteLength(req.body)}B)=${JSON.stringify(Buffer.from(req.body).subarray(0, 300).toString('latin1'))}`
  return `${req.method} ${req.target.slice(0, 200)} headers=${JSON.stringify((req.headers ?? []).map(([n, v]) => [n, String(v).slice(0, 80)]))}${body}`
}
