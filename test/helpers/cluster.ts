import { randomUUID } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runGateway, spawnGateway, type Child, type SpawnOptions } from './child.js'
import type { InfraEnv } from './infra.js'

interface Tap { teardown(fn: () => unknown): void }

export interface ClusterNode {
  child: Child
  url: string
  port: number
  incarnation: string
  dataDir: string
}

export interface TestCluster {
  /** What every node shares: the Kafka and S3 settings, with this cluster's own bucket and topics. */
  env: Record<string, string>
  bucket: string
  topic: string
  nodes: ClusterNode[]
}

/**
 * `count` real gateway processes on loopback forming one cluster (BUS=kafka
 * and STORAGE=s3 on the shared Kafka and MinIO), each with its own DATA_DIR
 * and port; a bucket and topics of their own. Started at once, so they race
 * for the first signing key as a fleet deployed together would. With
 * `isolated`, each in a pid namespace of its own, as on machines of their own.
 */
export interface ClusterOptions extends SpawnOptions {
  /** Node i's own variables, over the shared ones (a clock set off: test/helpers/faketime.ts). */
  nodeEnv?: ReadonlyArray<Record<string, string>>
}

export async function startCluster (t: Tap, infra: InfraEnv, count: number, extra: Record<string, string> = {}, options: ClusterOptions = {}): Promise<TestCluster> {
  const id = randomUUID()
  const bucket = `cluster-${id}`
  const topic = `evidence-${id}`
  const env = {
    ROLES: 'auth,ingest',
    STORAGE: 's3', S3_ENDPOINT: infra.S3_ENDPOINT, S3_FORCE_PATH_STYLE: 'true', S3_BUCKET: bucket, S3_PART_SIZE: String(5 * 1024 * 1024),
    AWS_ACCESS_KEY_ID: infra.AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: infra.AWS_SECRET_ACCESS_KEY, AWS_REGION: infra.AWS_REGION,
    BUS: 'kafka', KAFKA_BROKERS: infra.KAFKA_BROKERS, KAFKA_TOPIC_PARTITIONS: '1',
    TOPIC_EVIDENCE: topic, TOPIC_TELEMETRY: `telemetry-${id}`, TOPIC_RUNS: `runs-${id}`,
    ...extra
  }
  const nodes = await Promise.all(Array.from({ length: count }, async (_, i) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-node-'))
    const child = spawnGateway(t, ['start'], { ...env, ...options.nodeEnv?.[i], DATA_DIR: dataDir }, options)
    const listening = await child.waitFor('gateway listening') as { port: number, incarnation: string }
    return { child, url: `http://127.0.0.1:${listening.port}`, port: listening.port, incarnation: listening.incarnation, dataDir }
  }))
  return { env, bucket, topic, nodes }
}

/** `gateway clients add` against the cluster's shared store: the client and its one-time secret. */
export async function addClient (cluster: TestCluster, clientId: string, scopes: string[]): Promise<{ client_id: string, client_secret: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-cli-'))
  const args = ['clients', 'add', clientId, '--audience', 'evidence-gateway', ...scopes.flatMap(s => ['--scope', s])]
  const { code, stdout, stderr } = await runGateway(args, { ...cluster.env, DATA_DIR: dataDir })
  if (code !== 0) throw new Error(`gateway clients add failed: ${stderr}`)
  return JSON.parse(stdout) as { client_id: string, client_secret: string }
}
