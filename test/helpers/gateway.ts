import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { hashSecret } from '../../src/auth/index.js'
import { loadConfig, type Config } from '../../src/config/index.js'
import { startGateway, type Gateway } from '../../src/main.js'

export interface TestGateway {
  url: string
  harnessUrl: string
  gateway: Gateway
  config: Config
  dataDir: string
}

interface Tap {
  teardown(fn: () => unknown): void
}

export const CLIENT = { client_id: 'device-fleet', client_secret: 's3cret-for-tests', audiences: ['evidence-gateway'], scopes: ['asset:track:write', 'stream:write'], tenant: 'acme' }
export const NO_SCOPE_CLIENT = { client_id: 'reader', client_secret: 'reader-secret', audiences: ['evidence-gateway'], scopes: ['profile:read'] }

/**
 * Starts the whole gateway in-process on free ports with its own DATA_DIR
 * and a clients file holding CLIENT and NO_SCOPE_CLIENT; stopped at teardown.
 */
export async function startTestGateway (t: Tap, env: Record<string, string> = {}, extraClients: object[] = []): Promise<TestGateway> {
  // Not t.testdir(): a test may want a fixture folder of its own beside this one.
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-test-'))
  const clientsFile = join(dataDir, 'clients.json')
  writeFileSync(clientsFile, JSON.stringify(await Promise.all([CLIENT, NO_SCOPE_CLIENT, ...extraClients].map(hashed))))
  const config = loadConfig({ PORT: '0', HARNESS_PORT: '0', DATA_DIR: dataDir, AUTH_CLIENTS_FILE: clientsFile, LOG_LEVEL: 'silent', ...env })
  const gateway = await startGateway(config, pino({ level: config.logLevel }))
  t.teardown(async () => {
    await gateway.stop()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return { url: `http://127.0.0.1:${gateway.port}`, harnessUrl: `http://127.0.0.1:${gateway.harnessPort}`, gateway, config, dataDir }
}

const hashes = new Map<string, Promise<string>>()

/**
 * The entry with its secret hashed, as an operator's file holds it. Hashed
 * once per secret and test process: a plain secret costs every start of the
 * gateway a scrypt hash (120 ms of CPU), and the suite starts hundreds.
 */
async function hashed (entry: object): Promise<object> {
  const { client_secret: secret, ...rest } = entry as { client_secret?: unknown }
  if (typeof secret !== 'string') return entry
  let hash = hashes.get(secret)
  if (hash === undefined) hashes.set(secret, hash = hashSecret(secret))
  return { ...rest, client_secret_hash: await hash }
}

export async function login (url: string, client: { client_id: string, client_secret: string } = CLIENT, audience = 'evidence-gateway'): Promise<string> {
  const res = await fetch(`${url}/api/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials', client_id: client.client_id, client_secret: client.client_secret, audience })
  })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { access_token: string }).access_token
}

export function writeJson (dir: string, name: string, value: unknown): string {
  const file = join(dir, name)
  writeFileSync(file, JSON.stringify(value))
  return file
}
