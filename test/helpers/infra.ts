import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const INFRA = fileURLToPath(new URL('../../scripts/infra.sh', import.meta.url))

export interface InfraEnv {
  KAFKA_BROKERS: string
  S3_ENDPOINT: string
  AWS_ACCESS_KEY_ID: string
  AWS_SECRET_ACCESS_KEY: string
  AWS_REGION: string
}

interface Tap {
  skip: (...args: any[]) => unknown
  fail: (...args: any[]) => unknown
  teardown(fn: () => unknown): void
}

/**
 * The Kafka and MinIO that `npm test` started, or undefined after a loud skip
 * when TEST_INFRA=skip. Without either, the test fails: never a silent skip.
 */
export function sharedInfra (t: Tap): InfraEnv | undefined {
  if (process.env['TEST_INFRA'] === 'skip') {
    console.error('# SKIPPED: needs Kafka and MinIO (TEST_INFRA=skip)')
    t.skip('TEST_INFRA=skip: this test needs the real Kafka and MinIO')
    return undefined
  }
  const env = process.env as Partial<InfraEnv>
  if (!env.KAFKA_BROKERS || !env.S3_ENDPOINT) {
    t.fail('KAFKA_BROKERS / S3_ENDPOINT not set: run through `npm test`, which starts Kafka and MinIO (or set TEST_INFRA=skip)')
    return undefined
  }
  return { KAFKA_BROKERS: env.KAFKA_BROKERS, S3_ENDPOINT: env.S3_ENDPOINT, AWS_ACCESS_KEY_ID: env.AWS_ACCESS_KEY_ID!, AWS_SECRET_ACCESS_KEY: env.AWS_SECRET_ACCESS_KEY!, AWS_REGION: env.AWS_REGION ?? 'us-east-1' }
}

export interface PrivateInfra {
  env: InfraEnv
  stopKafka(): Promise<void>
  startKafka(): Promise<void>
  /** SIGKILL, as a crash; data and port kept (startKafka brings it back). */
  killKafka(): Promise<void>
  /** SIGSTOP: connections are accepted and nothing is answered, until thawKafka (SIGCONT). */
  freezeKafka(): Promise<void>
  thawKafka(): Promise<void>
  /** SIGKILL, as a crash; data and port kept. */
  killMinio(): Promise<void>
  /** Starts MinIO again on the same port with the same data. */
  startMinio(): Promise<void>
  /** SIGSTOP: connections are accepted and nothing is answered, until thawMinio (SIGCONT). */
  freezeMinio(): Promise<void>
  thawMinio(): Promise<void>
}

/**
 * A Kafka and MinIO of this test file alone, for tests that stop, kill or
 * freeze them: doing that to the shared ones would break tests running
 * beside them. `{ kafka: false }` starts MinIO only (faster).
 */
export async function privateInfra (t: Tap, options: { kafka?: boolean } = {}): Promise<PrivateInfra | undefined> {
  if (!sharedInfra(t)) return undefined
  const runDir = mkdtempSync(join(tmpdir(), 'gw-infra-'))
  const opts = { env: { ...process.env, GATEWAY_INFRA_RUN: runDir }, maxBuffer: 1 << 20 }
  const infra = async (command: string): Promise<void> => { await run('bash', [INFRA, command], opts) }
  t.teardown(() => infra('down'))
  const { stdout } = await run('bash', [INFRA, options.kafka === false ? 'up-minio' : 'up'], opts)
  const env = Object.fromEntries(stdout.split('\n').filter(l => l.includes('=')).map(l => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])) as unknown as InfraEnv
  return {
    env,
    stopKafka: () => infra('down-kafka'),
    startKafka: () => infra('up-kafka'),
    killKafka: () => infra('kill-kafka'),
    freezeKafka: () => infra('freeze-kafka'),
    thawKafka: () => infra('thaw-kafka'),
    killMinio: () => infra('kill-minio'),
    startMinio: () => infra('up-minio'),
    freezeMinio: () => infra('freeze-minio'),
    thawMinio: () => infra('thaw-minio')
  }
}
