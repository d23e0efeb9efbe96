import { execFile, execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { parseAllDocuments } from 'yaml'
import { variables } from '../../src/config/index.js'

export const root = fileURLToPath(new URL('../../', import.meta.url))
export const chart = fileURLToPath(new URL('../../deploy/helm/evidence-gateway', import.meta.url))
export const readRepo = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')

/** Where scripts/deploy-tools.sh put helm, kubeconform, promtool and the schemas. */
export interface DeployTools {
  HELM: string
  KUBECONFORM: string
  PROMTOOL: string
  KUBE_SCHEMA_LOCATIONS: string
  KUBE_VERSIONS: string
}

/**
 * `npm test` installs the tools before tap starts (scripts/test.mjs) and passes their paths; a file run
 * alone asks the script where they are, and fails with the command that installs them.
 */
export function deployTools (): DeployTools {
  const env = process.env as Partial<DeployTools>
  if (env.HELM && env.KUBECONFORM && env.PROMTOOL && env.KUBE_SCHEMA_LOCATIONS && env.KUBE_VERSIONS) return env as DeployTools
  let out: string
  try {
    out = execFileSync('bash', [`${root}scripts/deploy-tools.sh`, 'env'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch {
    throw new Error('helm, kubeconform and promtool are not installed: run `bash scripts/deploy-tools.sh install` (npm test does)')
  }
  return Object.fromEntries(out.trim().split('\n').map(line => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])) as unknown as DeployTools
}

/**
 * promtool alone, which the alert and metrics tests need (helm takes long to
 * build): from the environment `npm test` passes, else installed or found
 * by scripts/deploy-tools.sh (cached).
 */
export function promtool (): string {
  if (process.env['PROMTOOL']) return process.env['PROMTOOL']
  const out = execFileSync('bash', [`${root}scripts/deploy-tools.sh`, 'promtool'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  return out.trim().split('\n').find(l => l.startsWith('PROMTOOL='))!.slice('PROMTOOL='.length)
}

export const run = promisify(execFile)

/** A failed command's output, for the assertion message. */
export function output (err: unknown): string {
  const e = err as { stdout?: string, stderr?: string, message: string }
  return `${e.stdout ?? ''}${e.stderr ?? ''}` || e.message
}

export type Manifest = { apiVersion: string, kind: string, metadata: { name: string, labels?: Record<string, string> }, spec?: any, [k: string]: any }

export function parseManifests (text: string): Manifest[] {
  return parseAllDocuments(text).map(d => d.toJS()).filter((d): d is Manifest => d !== null && typeof d === 'object')
}

/** Variables the deployment files may set: the gateway's own and the AWS SDK's. */
export const knownVariables = new Set<string>([...variables.map(v => v.name), 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'])

/** Variables whose value is a secret: never written into a deployment file. */
export const secretVariables = ['HARNESS_TENANT_ASSERTION_SECRET', 'AWS_SECRET_ACCESS_KEY', 'KAFKA_PASSWORD', 'FRONTDOOR_HS256_SECRET', 'HARNESS_LLM_API_KEY', 'METRICS_TOKEN']

export function defaultOf (name: string): unknown {
  const v = variables.find(v => v.name === name) as { default?: unknown } | undefined
  if (v?.default === undefined) throw new Error(`${name} has no default`)
  return v.default
}
