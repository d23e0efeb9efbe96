import type { Logger } from 'pino'
import type { Config } from '../config/index.js'
import { type Route, type RequestContext, type Reply } from '../http/index.js'
import { GatewayError } from '../errors.js'
import type { StateStore } from '../state/index.js'
import { ClientRegistry } from './clients.js'
import { KeyStore } from './keys.js'
import { parseLoginRequest } from './login-request.js'
import { FailureLimiter } from './rate-limit.js'
import { issueToken, TokenVerifier } from './tokens.js'

const ROTATION_CHECK_MS = 60 * 60 * 1000

/** Login, the signing keys, and the token check the ingest routes use. */
export class AuthService {
  readonly clients: ClientRegistry
  readonly keys: KeyStore
  readonly verifier: TokenVerifier
  private readonly limiter: FailureLimiter
  private rotationTimer: NodeJS.Timeout | undefined

  constructor (private readonly config: Config, state: StateStore, private readonly log: Logger) {
    this.clients = new ClientRegistry(state)
    this.keys = new KeyStore(state, { tokenTtlS: config.authTokenTtlS, rotationS: config.authKeyRotationS, signingKeyFile: config.authSigningKeyFile })
    this.limiter = new FailureLimiter(config.authMaxFailures, config.authFailureWindowS * 1000)
    const external = config.idpIssuer && config.idpJwksUrl ? { issuer: config.idpIssuer, jwksUrl: config.idpJwksUrl } : undefined
    this.verifier = new TokenVerifier(this.keys, { issuer: config.authIssuer, audiences: config.authAudience, external })
  }

  async start (): Promise<void> {
    await this.clients.init(this.config.authClientsFile, this.log)
    await this.keys.init()
    this.rotationTimer = setInterval(() => {
      this.keys.rotateIfDue().catch(err => this.log.error({ err }, 'signing key rotation failed'))
    }, ROTATION_CHECK_MS).unref()
  }

  stop (): void {
    clearInterval(this.rotationTimer)
  }

  routes (): Route[] {
    return [
      { method: 'POST', path: '/api/v1/login', body: 'json', bodyLimit: 16 * 1024, errors: 'oauth', handler: ctx => this.login(ctx) },
      { method: 'GET', path: '/.well-known/jwks.json', handler: () => this.jwks() }
    ]
  }

  private async login (ctx: RequestContext): Promise<Reply> {
    const request = parseLoginRequest(ctx.json())
    const clientKey = `client:${request.client_id}`
    const addressKey = `addr:${ctx.remoteAddress}`
    const wait = Math.max(this.limiter.retryAfter(clientKey), this.limiter.retryAfter(addressKey))
    if (wait > 0) {
      throw new GatewayError('rate_limited', 'too many failed logins; retry later', { headers: { 'retry-after': String(wait) } })
    }
    const client = await this.clients.authenticate(request.client_id, request.client_secret)
    if (!client) {
      this.limiter.fail(clientKey)
      this.limiter.fail(addressKey)
      throw new GatewayError('invalid_client', 'unauthorized client credentials')
    }
    this.limiter.reset(clientKey)
    if (!client.audiences.includes(request.audience)) {
      throw new GatewayError('audience_forbidden', `client is not authorized for audience ${request.audience}`)
    }
    const token = await issueToken(this.keys, client, request.audience, this.config.authIssuer, this.config.authTokenTtlS)
    return { status: 200, body: token, headers: { 'cache-control': 'no-store', pragma: 'no-cache' } }
  }

  private jwks (): Reply {
    return { status: 200, body: Buffer.from(this.keys.jwks), headers: { 'content-type': 'application/jwk-set+json', 'cache-control': 'public, max-age=300' } }
  }
}
