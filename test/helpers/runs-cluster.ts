import { randomUUID } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { partitionOfKey } from '../../src/bus/index.js'
import { spawnGateway, type Child } from './child.js'
import { eventually } from './settle.js'
import type { InfraEnv } from './infra.js'

interface Tap { teardown(fn: () => unknown): void }

export interface RunNode {
  name: string
  child: Child
  base: string
}

export interface RunsClusterEnv {
  /** What every node shares: Kafka and MinIO, and this cluster's own topics, bucket and group. */
  env: Record<string, string>
  topic: string
  commands: string
  partitions: number
  sessionMs: number
}

/** A cluster's shared settings: harness-only nodes on the shared Kafka and MinIO, topics and a group of its own. */
export function runsClusterEnv (infra: InfraEnv, extra: Record<string, string> = {}, partitions = 6): RunsClusterEnv {
  const id = randomUUID()
  const sessionMs = 6000
  const env = {
    ...infra,
    ROLES: 'harness',
    BUS: 'kafka',
    STORAGE: 's3',
    S3_FORCE_PATH_STYLE: 'true',
    S3_BUCKET: `runs-${id}`,
    KAFKA_TOPIC_PARTITIONS: String(partitions),
    TOPIC_RUNS: `runs-${id}`,
    TOPIC_RUNS_CONTROL: `commands-${id}`,
    TOPIC_TELEMETRY: `telemetry-${id}`,
    TOPIC_EVIDENCE: `evidence-${id}`,
    HARNESS_GROUP_ID: `runs-${id}`,
    HARNESS_SESSION_TIMEOUT_MS: String(sessionMs),
    HARNESS_PEER_PORT: '0',
    ...extra
  }
  return { env, topic: env.TOPIC_RUNS, commands: env.TOPIC_RUNS_CONTROL, partitions, sessionMs }
}

/** One gateway of the cluster in a pid namespace of its own, as on a machine of its own, with its own DATA_DIR. */
export async function startRunNode (t: Tap, cluster: RunsClusterEnv, name: string, extra: Record<string, string> = {}): Promise<RunNode> {
  const child = spawnGateway(t, ['start'], { ...cluster.env, DATA_DIR: mkdtempSync(join(tmpdir(), `gw-${name}-`)), ...extra }, { isolated: true })
  const { harnessPort } = await child.waitFor('gateway listening') as { harnessPort: number }
  return { name, child, base: `http://127.0.0.1:${harnessPort}` }
}

export interface RunsState { serving: number[], starting: number[] }

/** The partitions a node serves now, from its readiness; undefined while it is not a member. */
export async function runsState (node: RunNode): Promise<RunsState | undefined> {
  try {
    const body = await (await fetch(`${node.base}/health/ready`)).json() as { components: { runs?: RunsState & { ready: boolean } } }
    const runs = body.components.runs
    return runs?.ready === true ? { serving: runs.serving, starting: runs.starting } : undefined
  } catch {
    return undefined
  }
}

/** Waits until the live nodes between them serve every partition, each once, none being taken up. */
export async function settledLayout (cluster: RunsClusterEnv, nodes: RunNode[], timeoutMs = 60_000): Promise<Map<number, RunNode>> {
  const layout = await eventually(async () => Promise.all(nodes.map(runsState)), states => {
    if (states.some(s => s === undefined || s.starting.length > 0)) return false
    const all = states.flatMap(s => s!.serving).sort((a, b) => a - b)
    return all.length === cluster.partitions && all.every((p, i) => p === i)
  }, timeoutMs, 250)
  const owners = new Map<number, RunNode>()
  layout.forEach((s, i) => { for (const p of s!.serving) owners.set(p, nodes[i]!) })
  return owners
}

export function partitionOf (cluster: RunsClusterEnv, runId: string): number {
  return partitionOfKey(runId, cluster.partitions)
}

const json = (res: Response): Promise<any> => res.json()

export async function startRun (node: RunNode, options: object, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${node.base}/runs:start`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ message: 'shared', mode: 'echo', options }) })
  const body = await json(res)
  if (res.status !== 202) throw new Error(`runs:start answered ${res.status}: ${JSON.stringify(body)}`)
  return body.run_id
}

export async function getRun (node: RunNode, id: string, headers: Record<string, string> = {}): Promise<{ status: number, body: any }> {
  const res = await fetch(`${node.base}/runs/${id}`, { headers })
  return { status: res.status, body: await json(res) }
}

export function streamRun (node: RunNode, id: string, lastEventId?: string): Promise<Response> {
  return fetch(`${node.base}/runs/${id}/stream`, { headers: lastEventId === undefined ? {} : { 'last-event-id': lastEventId } })
}
