import type { Logger } from 'pino'
import { Counter, type Registry } from 'prom-client'
import type { Config } from '../config/index.js'
import { type Route, type RequestContext, type Reply } from '../http/index.js'
import { GatewayError } from '../errors.js'
import { isStorageId } from '../validation/index.js'
import type { ClientStore } from './client-store.js'
import { ClientRegistry, type Client } from './clients.js'
import { Credentials } from './credentials.js'
import type { KeyVault } from './key-vault.js'
import { KeyStore } from './keys.js'
import { KeyWrap } from './key-wrap.js'
import { loginBody, parseLoginRequest } from './login-request.js'
import { clientAddress, LoginThrottle, networkPrefix } from './rate-limit.js'
import { Revocation } from './revocation.js'
import { CLEAN, SUSPECT } from './scrypt-pool.js'
import { issueToken, TokenVerifier } from './tokens.js'

/**
 * How often the signing keys are read again (and rotated when due): a key
 * another node made is published here, and signs, within this time.
 */
export const KEY_REFRESH_MS = 5_000

/** Where the clients and the signing keys are kept: this node's LMDB, or S3 for a cluster. */
export interface AuthStores {
  clients: ClientStore
  keys: KeyVault
}

/** Login, the signing keys, and the token check the ingest routes use. */
export class AuthService {
  readonly clients: ClientRegistry
  readonly keys: KeyStore
  readonly verifier: TokenVerifier
  /** Whether a token of this service's is still its client's (the front door checks user tokens with it). */
  readonly revocation: Revocation
  private readonly credentials: Credentials
  private readonly throttle: LoginThrottle
  private readonly addressHeader: string | undefined
  /** Networks and blocks with a check in the clean lane now. */
  private readonly cleanChecks = new Set<string>()
  private rotationTimer: NodeJS.Timeout | undefined
  private refreshFailing = false

  private readonly logins: Counter<'result'> | undefined

  constructor (private readonly config: Config, stores: AuthStores, private readonly log: Logger, registry?: Registry) {
    // By the error code (`invalid_client`, `rate_limited`: a lockout, `overloaded`...), or `success`.
    this.logins = registry && new Counter({ name: 'gateway_auth_logins_total', help: 'Logins by result: success, or the error code of the answer (rate_limited is a client or address locked out)', labelNames: ['result'], registers: [registry] })
    this.clients = new ClientRegistry(stores.clients)
    this.credentials = new Credentials(this.clients, { threads: config.authHashThreads, queue: config.authHashQueue, cacheTtlMs: config.authSecretCacheS * 1000 })
    const wrap = config.authKeyWrapFile === undefined ? undefined : KeyWrap.fromFile(config.authKeyWrapFile, config.dataDir)
    this.keys = new KeyStore(stores.keys, { tokenTtlS: config.authTokenTtlS, rotationS: config.authKeyRotationS, publishLeadS: config.authKeyPublishLeadS, signingKeyFile: config.authSigningKeyFile, wrap })
    this.throttle = new LoginThrottle({ perClient: config.authMaxFailures, perAddress: config.authAddressMaxFailures, perPrefix: config.authPrefixMaxFailures, windowMs: config.authFailureWindowS * 1000 })
    this.addressHeader = config.authClientAddressHeader?.toLowerCase()
    const external = config.idpIssuer && config.idpJwksUrl ? { issuer: config.idpIssuer, jwksUrl: config.idpJwksUrl } : undefined
    this.revocation = new Revocation(clientId => this.clients.get(clientId))
    this.verifier = new TokenVerifier(this.keys, { issuer: config.authIssuer, audiences: config.authAudience, external, revocation: this.revocation })
  }

  async start (): Promise<void> {
    await this.credentials.start(this.config.authClientsFile, this.log)
    await this.keys.init()
    this.rotationTimer = setInterval(() => {
      this.keys.rotateIfDue().then(() => {
        if (this.refreshFailing) this.log.info('signing keys read again')
        this.refreshFailing = false
      }, err => {
        if (!this.refreshFailing) this.log.error({ err }, 'signing keys not read or rotated; signing with the last ones read')
        this.refreshFailing = true
      })
    }, KEY_REFRESH_MS).unref()
  }

  async stop (): Promise<void> {
    clearInterval(this.rotationTimer)
    await this.credentials.close()
  }

  routes (): Route[] {
    return [
      { method: 'POST', path: '/api/v1/login', body: 'json', bodyLimit: 16 * 1024, errors: 'oauth', handler: ctx => this.counted(this.login(ctx)) },
      { method: 'GET', path: '/.well-known/jwks.json', handler: () => this.jwks() }
    ]
  }

  private async counted (login: Promise<Reply>): Promise<Reply> {
    try {
      const reply = await login
      this.logins?.inc({ result: 'success' })
      return reply
    } catch (err) {
      this.logins?.inc({ result: err instanceof GatewayError ? err.code : 'error' })
      throw err
    }
  }

  private async login (ctx: RequestContext): Promise<Reply> {
    const request = parseLoginRequest(loginBody(ctx.headers['content-type'], ctx.rawBody, () => ctx.json()))
    const address = clientAddress(ctx.remoteAddress, this.addressHeader === undefined ? undefined : ctx.headers[this.addressHeader])
    // An id outside the grammar names no client: it is a failure without a hash, counted per address only.
    const clientId = isStorageId(request.client_id) ? request.client_id : undefined
    const wait = this.throttle.retryAfter(clientId, address)
    if (wait > 0) {
      throw new GatewayError('rate_limited', 'too many failed logins; retry later', { headers: { 'retry-after': String(wait) } })
    }
    const client = clientId === undefined ? undefined : await this.authenticate(clientId, request.client_secret, address, ctx.signal)
    if (!client) {
      this.throttle.failed(clientId, address)
      throw new GatewayError('invalid_client', 'unauthorized client credentials')
    }
    this.throttle.succeeded(client.client_id, address)
    if (!client.audiences.includes(request.audience)) {
      throw new GatewayError('audience_forbidden', `client is not authorized for audience ${request.audience}`)
    }
    const token = await issueToken(this.keys, client, request.audience, this.config.authIssuer, this.config.authTokenTtlS)
    return { status: 200, body: token, headers: { 'cache-control': 'no-store', pragma: 'no-cache' } }
  }

  /**
   * The secret checked in its lane (LoginThrottle.lane). A network, and the
   * block around it, get one check at a time in the clean lane: a burst from
   * networks nobody has seen fail yet, sent before their first failures are
   * counted, waits with the suspects instead of taking the clean lane's
   * places, unless it comes from that many different blocks.
   */
  private async authenticate (clientId: string, secret: string, address: string, signal: AbortSignal): Promise<Client | undefined> {
    let lane = this.throttle.lane(clientId, address)
    const networks = [networkPrefix(address), networkPrefix(address, true)]
    if (lane === CLEAN && networks.some(n => this.cleanChecks.has(n))) lane = SUSPECT
    if (lane !== CLEAN) return this.credentials.authenticate(clientId, secret, lane, signal)
    for (const n of networks) this.cleanChecks.add(n)
    try {
      return await this.credentials.authenticate(clientId, secret, lane, signal)
    } finally {
      for (const n of networks) this.cleanChecks.delete(n)
    }
  }

  private jwks (): Reply {
    return { status: 200, body: Buffer.from(this.keys.jwks), headers: { 'content-type': 'application/jwk-set+json', 'cache-control': 'public, max-age=300' } }
  }
}
