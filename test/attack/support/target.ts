import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { calculateJwkThumbprint, exportJWK, SignJWT, type JWTPayload } from 'jose'
import { signTenantAssertion } from '../../../src/auth/index.js'
import { spawnGateway, tailBus, type Child, type TailedMessage } from '../../helpers/child.js'
import { send, type Outcome, type RawRequest } from './wire.js'
import { freePort, selfTrustingHarness } from '../../helpers/ports.js'

interface Tap { teardown(fn: () => unknown): void }

export const TOPICS = { telemetry: 'asset.telemetry.v1', evidence: 'stream.events.v1', runs: 'harness.runs.v1' } as const
export const INGEST_AUDIENCE = 'evidence-gateway'
export const HARNESS_AUDIENCE = 'harness'
export const HS256_SECRET = 'attack-suite-hs256-secret-0123456789abcdef'
export const ASSERTION_SECRET = 'attack-suite-assertion-secret-0123456789abcdef'

export const DEVICE = { client_id: 'device-fleet', client_secret: 'device-secret', audiences: [INGEST_AUDIENCE], scopes: ['asset:track:write', 'stream:write'], tenant: 'acme' }
export const OTHER_DEVICE = { client_id: 'other-fleet', client_secret: 'other-secret', audiences: [INGEST_AUDIENCE], scopes: ['asset:track:write', 'stream:write'] }
export const READER = { client_id: 'reader', client_secret: 'reader-secret', audiences: [INGEST_AUDIENCE], scopes: ['profile:read'] }
export const WEB_USER = { client_id: 'web-user', client_secret: 'web-secret', audiences: [HARNESS_AUDIENCE], scopes: ['runs'] }
/** Org slugs and the tenants the front door gives them. */
export const ORGS = { acme: { tenant: 'acme-t', members: ['web-user', 'svc-billing'] }, initech: { tenant: 'initech-t', members: ['initech-user'] } }

/**
 * The gateway under attack: a real process (so a crash is seen as one), every
 * role, local bus and filesystem store in a DATA_DIR of its own, harness auth
 * on and the tenant assertion required, and a signing key the suite holds,
 * so it can mint any token the gateway would issue, and any it should refuse.
 */
export interface Target {
  child: Child
  port: number
  harnessPort: number
  dataDir: string
  issuer: string
  key: { privateKey: KeyObject, publicKey: KeyObject, kid: string }
  /** A token signed with the gateway's own key; claims and header as given over sane defaults. */
  mint(claims?: JWTPayload, header?: Record<string, unknown>): Promise<string>
  /** An ingest token of DEVICE (both scopes). */
  device: string
  /** A harness token of WEB_USER (a member of acme). */
  user: string
  /** The headers a direct harness call needs for `tenant` with `token`: bearer, tenant, assertion. */
  harnessHeaders(token: string, tenant?: string): Array<[string, string]>
  /** GET /health on both ports answers 200 and the process is alive; else the reason. */
  alive(): Promise<string | undefined>
  /** Log lines at error level or above since the start. */
  errors(): Array<Record<string, unknown>>
  published(topic: string): Promise<TailedMessage[]>
  /** Every file under objects/, partial files included. */
  objects(): string[]
  /** Waits until the evidence outbox is empty (bounded). */
  settled(): Promise<void>
  send(port: number, req: RawRequest, timeoutMs?: number): Promise<Outcome>
}

export async function startTarget (t: Tap, env: Record<string, string> = {}): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gw-attack-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const keyFile = join(dataDir, 'signing.pem')
  writeFileSync(keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }))
  const kid = await calculateJwkThumbprint(await exportJWK(publicKey))
  const clientsFile = join(dataDir, 'clients.json')
  writeFileSync(clientsFile, JSON.stringify([DEVICE, OTHER_DEVICE, READER, WEB_USER]))
  const orgsFile = join(dataDir, 'orgs.json')
  writeFileSync(orgsFile, JSON.stringify(ORGS))
  const port = await freePort()
  const issuer = `http://127.0.0.1:${port}/`
  const child = spawnGateway(t, ['start'], {
    ...selfTrustingHarness(port, orgsFile),
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    AUTH_CLIENTS_FILE: clientsFile,
    AUTH_SIGNING_KEY_FILE: keyFile,
    FRONTDOOR_HS256_SECRET: HS256_SECRET,
    HARNESS_TENANT_ASSERTION_SECRET: ASSERTION_SECRET,
    HARNESS_SYNC_TIMEOUT_MS: '2000',
    HTTP_DRAIN_TIMEOUT_MS: '3000',
    ...env
  })
  const listening = await child.waitFor('gateway listening')
  const harnessPort = listening['harnessPort'] as number
  const mint = (claims: JWTPayload = {}, header: Record<string, unknown> = {}): Promise<string> => {
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({ iss: issuer, aud: INGEST_AUDIENCE, iat: now, exp: now + 600, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT', ...header })
      .sign(privateKey)
  }
  const target: Target = {
    child,
    port,
    harnessPort,
    dataDir,
    issuer,
    key: { privateKey, publicKey, kid },
    mint,
    device: await mint({ sub: DEVICE.client_id, client_id: DEVICE.client_id, tenant: DEVICE.tenant, scope: DEVICE.scopes.join(' ') }),
    user: await mint({ sub: WEB_USER.client_id, client_id: WEB_USER.client_id, aud: HARNESS_AUDIENCE, scope: 'runs' }),
    harnessHeaders: (token, tenant = ORGS.acme.tenant) => [
      ['Authorization', `Bearer ${token}`],
      ['X-Svc-Tenant-Client-Id', tenant],
      ['X-Svc-Tenant-Assertion', signTenantAssertion(ASSERTION_SECRET, tenant, token)]
    ],
    async alive () {
      if (child.proc.exitCode !== null || child.proc.signalCode !== null) return `the gateway exited (${child.proc.exitCode ?? child.proc.signalCode}): ${child.stderr().slice(-2000)}`
      for (const p of [port, harnessPort]) {
        const health = await send(p, { method: 'GET', target: '/health' }, 10_000)
        if (health.kind !== 'answer' || health.status !== 200) return `GET /health on ${p}: ${health.kind === 'answer' ? health.status : health.kind}`
      }
      return undefined
    },
    errors: () => child.lines.filter(l => typeof l['level'] === 'number' && l['level'] >= 50),
    published: topic => tailBus(dataDir, topic),
    objects: () => {
      const root = join(dataDir, 'objects')
      if (!existsSync(root)) return []
      return readdirSync(root, { recursive: true, withFileTypes: true }).filter(d => d.isFile()).map(d => join(d.parentPath, d.name).slice(root.length + 1)).sort()
    },
    async settled () {
      const deadline = Date.now() + 20_000
      while (Date.now() < deadline) {
        const ready = await send(port, { method: 'GET', target: '/health/ready' })
        const backlog = ready.kind === 'answer' ? (ready.json as any)?.components?.outbox?.backlog : undefined
        if (backlog === 0) return
        await new Promise(resolve => setTimeout(resolve, 50))
      }
      throw new Error('the evidence outbox did not drain within 20 s')
    },
    send: (p, req, timeoutMs) => send(p, req, timeoutMs)
  }
  return target
}
