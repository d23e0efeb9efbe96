import { availableParallelism } from 'node:os'
import { Ajv } from 'ajv'
import { snakeToCamel } from '../validation/index.js'
import { variables, ownedPrefixes, type Variable } from './variables.js'

type CamelTail<S extends string> = S extends `${infer H}_${infer T}`
  ? `${Capitalize<Lowercase<H>>}${CamelTail<T>}`
  : Capitalize<Lowercase<S>>
type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${Lowercase<H>}${CamelTail<T>}` : Lowercase<S>

type ValueOf<V extends Variable> = V['type'] extends 'integer' ? number
  : V['type'] extends 'boolean' ? boolean
    : V['type'] extends 'list' ? readonly string[]
      : string

type Vars = (typeof variables)[number]

/** The frozen configuration: one camelCase key per variable (`TELEMETRY_BATCH_MAX` → `telemetryBatchMax`). */
export type Config = {
  readonly [V in Vars as Camel<V['name']>]: V extends { default: Variable['default'] } ? ValueOf<V> : ValueOf<V> | undefined
}

export class ConfigError extends Error {
  readonly code = 'config_invalid'
  constructor (message: string) {
    super(message)
    this.name = 'ConfigError'
  }
}

/**
 * A start-up step that failed for a reason outside the gateway (a folder it
 * cannot write, a bucket it cannot reach): the message names the setting,
 * the path or endpoint, the cause and what to do, on one line; the cause's
 * stack is for debug level.
 */
export class StartupError extends Error {
  readonly code = 'startup_failed'
  constructor (message: string, cause: unknown) {
    super(message, { cause })
    this.name = 'StartupError'
  }
}

/**
 * Runs one start-up step; its failure becomes a StartupError saying `what`
 * could not be done, why (the cause's message, or its name and HTTP status
 * where an SDK gives no message), and `fix`. A ConfigError passes unchanged.
 */
export async function startupStep<T> (what: string, fix: string, step: () => T | Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (err) {
    // A configuration verdict already names the setting and what is wrong with it.
    if (err instanceof StartupError || err instanceof ConfigError) throw err
    throw new StartupError(`${what}: ${causeOf(err)}; ${fix}`, err)
  }
}

function causeOf (err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode
  const code = (err as { code?: unknown }).code
  const message = err.message.split('\n')[0]!.trim()
  const parts = [message === '' || message === 'UnknownError' ? err.name : message]
  if (typeof code === 'string' && !parts[0]!.includes(code)) parts.push(code)
  if (status !== undefined) parts.push(`HTTP ${status}`)
  return parts.join(', ')
}

/** `TELEMETRY_BATCH_MAX` → `telemetryBatchMax`. */
export function camelName (name: string): string {
  return snakeToCamel(name.toLowerCase())
}

const TRUE = new Set(['true', '1', 'yes', 'on'])
const FALSE = new Set(['false', '0', 'no', 'off'])

function toJsonValue (v: Variable, raw: string): unknown {
  switch (v.type) {
    case 'integer': return /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw
    case 'boolean': {
      const s = raw.trim().toLowerCase()
      return TRUE.has(s) ? true : FALSE.has(s) ? false : raw
    }
    case 'list': return raw.split(',').map(s => s.trim()).filter(s => s !== '')
    default: return raw
  }
}

function propertySchema (v: Variable): object {
  switch (v.type) {
    case 'integer': return { type: 'integer', minimum: v.minimum, maximum: v.maximum }
    case 'boolean': return { type: 'boolean' }
    case 'list': return { type: 'array', items: v.enum ? { enum: v.enum } : { type: 'string', minLength: 1 } }
    case 'url': return { type: 'string', pattern: '^(https?|s3)://[^\\s]+$' }
    default: return v.enum ? { enum: v.enum } : { type: 'string' }
  }
}

const schema = {
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(variables.map(v => [v.name, propertySchema(v)]))
}
const validate = new Ajv({ allErrors: true, strict: true }).compile(schema)

function closest (name: string): string | undefined {
  let best: string | undefined
  let bestDistance = 3
  for (const v of variables) {
    const d = editDistance(name, v.name)
    if (d < bestDistance) { best = v.name; bestDistance = d }
  }
  return best
}

function editDistance (a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!
      row[j] = Math.min(up + 1, row[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1))
      diag = up
    }
  }
  return row[b.length]!
}

/** Shortest HMAC-SHA256 key accepted: one shorter than the hash's output weakens it (RFC 2104 §3). */
const HMAC_KEY_MIN_BYTES = 32

/** The front door builds each upstream path itself from this origin and base path, so nothing else may ride along. */
function harnessUrlProblems (raw: string): string[] {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return [`HARNESS_URL=${JSON.stringify(raw)} is not a URL`]
  }
  if (url.protocol !== 'http:' || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    return [`HARNESS_URL=${JSON.stringify(raw)} must be http://host[:port][/base-path], without credentials, query or fragment`]
  }
  return []
}

/**
 * Kafka and S3 together make a cluster: nodes that share them share the
 * signing keys, the clients and the idempotency claims through S3, each
 * with its own DATA_DIR. No other switch (docs/cluster-state.md).
 */
export function isCluster (config: Pick<Config, 'bus' | 'storage'>): boolean {
  return config.bus === 'kafka' && config.storage === 's3'
}

/** The spec's `metrics.schema`: an operator adds others beside it, never instead of it. */
const SPEC_METRICS_SCHEMA = 'svc.metrics@1.0'
/** A schema name as devices send it: short visible ASCII, so the hot path compares its bytes. */
const METRICS_SCHEMA_NAME = /^[\x21-\x7e]{1,64}$/

function metricsSchemaProblems (schemas: readonly string[]): string[] {
  const problems = schemas.filter(s => !METRICS_SCHEMA_NAME.test(s)).map(s => `TELEMETRY_METRICS_SCHEMAS: ${JSON.stringify(s)} must be 1 to 64 visible ASCII characters`)
  if (!schemas.includes(SPEC_METRICS_SCHEMA)) problems.push(`TELEMETRY_METRICS_SCHEMAS must include ${SPEC_METRICS_SCHEMA}, the spec's value, beside the values it adds`)
  return problems
}

/** Most worker processes: past a few per core they only add memory and LMDB readers. */
export const MAX_WORKERS = 256

/** `WORKERS` (or `--workers`): an integer, or `auto` for the cores this process may run on (its affinity mask). */
export function workerCount (raw: string): number {
  const value = raw.trim()
  if (value === 'auto') return availableParallelism()
  if (!/^[1-9]\d*$/.test(value) || Number(value) > MAX_WORKERS) throw new ConfigError(`WORKERS=${JSON.stringify(raw)}: an integer from 1 to ${MAX_WORKERS}, or auto`)
  return Number(value)
}

/** libuv's thread pool as libuv sizes it: UV_THREADPOOL_SIZE, 4 when unset, within 1..1024. */
function uvThreadPoolSize (env: NodeJS.ProcessEnv): number {
  const n = Number.parseInt(env['UV_THREADPOOL_SIZE'] ?? '', 10)
  return Number.isNaN(n) ? 4 : Math.min(1024, Math.max(1, n))
}

/** Whether HOST reaches this machine only: 127.0.0.0/8, ::1 or `localhost`. A wildcard (0.0.0.0, ::) is not. */
export function isLoopbackHost (host: string): boolean {
  const h = host.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
}

/** Listeners of this process that would share a port: the kernel would split connections between two servers. */
function portProblems (c: Config): string[] {
  const main = c.roles.some(r => r !== 'harness')
  if (!main || !c.roles.includes('harness') || c.port === 0 || c.port !== c.harnessPort) return []
  return [`PORT and HARNESS_PORT are both ${c.port}: the gateway and the harness need a port each`]
}

function crossChecks (c: Config, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [...portProblems(c)]
  if (c.roles.includes('harness') && !c.svcHarnessAuthEnabled && !c.harnessAllowOpen && !isLoopbackHost(c.host)) {
    problems.push(`SVC_HARNESS_AUTH_ENABLED=false on HOST=${c.host}: /runs* would be open to the network; enable harness auth, listen on loopback, or set HARNESS_ALLOW_OPEN=true to accept it`)
  }
  const pool = uvThreadPoolSize(env)
  if (c.authHashThreads >= pool) {
    problems.push(`AUTH_HASH_THREADS (${c.authHashThreads}) must be below libuv's thread pool (UV_THREADPOOL_SIZE, ${pool}): lmdb commits and file writes need a thread of it while logins hash; raise UV_THREADPOOL_SIZE with it`)
  }
  try {
    workerCount(c.workers)
  } catch (err) {
    problems.push((err as Error).message)
  }
  if (c.svcHarnessAuthEnabled) {
    for (const name of ['IDP_ISSUER', 'IDP_JWKS_URL', 'IDP_RS256_AUDIENCE'] as const) {
      if (!c[camelName(name) as keyof Config]) problems.push(`${name} is required when SVC_HARNESS_AUTH_ENABLED=true`)
    }
  }
  if (c.harnessTenantAssertionSecret !== undefined && Buffer.byteLength(c.harnessTenantAssertionSecret) < HMAC_KEY_MIN_BYTES) {
    problems.push(`HARNESS_TENANT_ASSERTION_SECRET must be at least ${HMAC_KEY_MIN_BYTES} bytes`)
  }
  if (c.authKeyPublishLeadS >= c.authKeyRotationS) problems.push(`AUTH_KEY_PUBLISH_LEAD_S (${c.authKeyPublishLeadS}) must be below AUTH_KEY_ROTATION_S (${c.authKeyRotationS}): a key is published that long before it signs, and signs until the next one does`)
  if (c.harnessUrl !== undefined) problems.push(...harnessUrlProblems(c.harnessUrl))
  if (c.bus === 'kafka' && (c.kafkaBrokers?.length ?? 0) === 0) problems.push('KAFKA_BROKERS is required when BUS=kafka')
  if (c.kafkaSaslMechanism && (!c.kafkaUsername || !c.kafkaPassword)) {
    problems.push('KAFKA_USERNAME and KAFKA_PASSWORD are required when KAFKA_SASL_MECHANISM is set')
  }
  if (c.httpBodyBufferBytes < c.telemetryMaxBody) problems.push(`HTTP_BODY_BUFFER_BYTES (${c.httpBodyBufferBytes}) must hold at least one TELEMETRY_MAX_BODY (${c.telemetryMaxBody})`)
  if (c.httpBodyBufferBytes < c.telemetryBatchMaxBody) problems.push(`HTTP_BODY_BUFFER_BYTES (${c.httpBodyBufferBytes}) must hold at least one TELEMETRY_BATCH_MAX_BODY (${c.telemetryBatchMaxBody})`)
  problems.push(...metricsSchemaProblems(c.telemetryMetricsSchemas))
  // A resumable upload's parts must outlive it: the bucket's rule would abort them under a client still sending.
  if (c.storage === 's3' && c.s3AbortIncompleteUploadsDays > 0 && c.evidenceUploadExpiresS > c.s3AbortIncompleteUploadsDays * 86_400) {
    problems.push(`EVIDENCE_UPLOAD_EXPIRES_S (${c.evidenceUploadExpiresS}) must not pass S3_ABORT_INCOMPLETE_UPLOADS_DAYS (${c.s3AbortIncompleteUploadsDays} d): the bucket's rule would abort a resumable upload's parts while it may still be resumed`)
  }
  if (c.storageBufferBytes < c.s3PartSize) problems.push(`STORAGE_BUFFER_BYTES (${c.storageBufferBytes}) must hold at least one S3_PART_SIZE (${c.s3PartSize})`)
  return problems
}

/**
 * Reads the environment once. Fails with every problem named at once, so an
 * operator fixes a deployment in one pass rather than one restart per typo.
 */
export function loadConfig (env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = []
  const input: Record<string, unknown> = {}
  const known = new Map<string, Variable>(variables.map(v => [v.name, v]))

  for (const [name, raw] of Object.entries(env)) {
    if (raw === undefined) continue
    const v = known.get(name)
    if (v) {
      if (raw !== '') input[name] = toJsonValue(v, raw)
    } else if (ownedPrefixes.some(p => name.startsWith(p))) {
      const hint = closest(name)
      problems.push(`unknown variable ${name}${hint ? ` (did you mean ${hint}?)` : ''}`)
    }
  }

  if (!validate(input)) {
    for (const e of validate.errors ?? []) {
      const name = e.instancePath.split('/')[1] ?? ''
      problems.push(`${name}=${JSON.stringify(env[name])}: ${e.message ?? 'invalid'}`)
    }
  }

  const config: Record<string, unknown> = {}
  for (const v of variables) {
    const value = input[v.name] ?? ('default' in v ? v.default : undefined)
    config[camelName(v.name)] = Array.isArray(value) ? Object.freeze([...value]) : value
  }
  if (problems.length === 0) problems.push(...crossChecks(config as Config, env))
  if (problems.length > 0) throw new ConfigError(`invalid configuration:\n  - ${problems.join('\n  - ')}`)
  return Object.freeze(config) as Config
}
