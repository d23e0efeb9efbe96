/** The login and the key set in `/openapi.json`. */
const LoginRequest = {
  type: 'object',
  required: ['grant_type', 'client_id', 'client_secret', 'audience'],
  properties: {
    grant_type: { const: 'client_credentials' },
    client_id: { type: 'string' },
    client_secret: { type: 'string', writeOnly: true },
    audience: { type: 'string', description: 'one of the client\'s audiences; ingest accepts AUTH_AUDIENCE' }
  }
}
const Token = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in', 'scope'],
  properties: {
    access_token: { type: 'string', description: 'an RS256 JWT' },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer', description: 'seconds (AUTH_TOKEN_TTL_S)' },
    scope: { type: 'string', description: 'the client\'s scopes, separated by spaces' }
  }
}
const OAuthError = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string', description: 'RFC 6749 §5.2: invalid_request, access_denied, unsupported_grant_type, slow_down, temporarily_unavailable...' }, error_description: { type: 'string' } }
}
const JwkSet = { type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: { type: 'object', required: ['kty', 'kid'], properties: { kty: { const: 'RSA' }, kid: { type: 'string' }, alg: { const: 'RS256' }, use: { const: 'sig' }, n: { type: 'string' }, e: { type: 'string' } } } } } }
const noStore = { 'Cache-Control': { description: '`no-store`: a token is never cached', schema: { type: 'string' } } }

export const authOpenApi = {
  tag: { name: 'login', description: 'Tokens by the client-credentials grant, and the keys that verify them' },
  errorSchema: { $ref: '#/components/schemas/OAuthError' },
  schemas: { LoginRequest, Token, OAuthError, JwkSet },
  paths: {
    '/api/v1/login': {
      post: {
        operationId: 'login',
        summary: 'A token for a client (client-credentials grant)',
        security: [],
        requestBody: {
          required: true,
          content: {
            'application/json': { schema: { $ref: '#/components/schemas/LoginRequest' } },
            'application/x-www-form-urlencoded': { schema: { $ref: '#/components/schemas/LoginRequest' } }
          }
        },
        responses: {
          200: { description: 'The token', headers: noStore, content: { 'application/json': { schema: { $ref: '#/components/schemas/Token' } } } },
          400: { description: 'invalid_request or unsupported_grant_type' },
          401: { description: 'access_denied: unknown client or wrong secret' },
          403: { description: 'access_denied: the client may not have that audience' },
          413: { description: 'A body over 16 KiB' },
          415: { description: 'Neither JSON nor a form (Accept-Post names both)' },
          429: { description: 'slow_down: too many failed logins of this client or address (AUTH_MAX_FAILURES, AUTH_ADDRESS_MAX_FAILURES)' },
          503: { description: 'temporarily_unavailable: too many logins waiting for a hash thread (AUTH_HASH_QUEUE)' }
        }
      }
    },
    '/.well-known/jwks.json': {
      get: {
        operationId: 'getJwks',
        summary: 'The public keys that verify the gateway\'s tokens',
        security: [],
        responses: { 200: { description: 'The key set; a key is published AUTH_KEY_PUBLISH_LEAD_S before it signs', content: { 'application/jwk-set+json': { schema: { $ref: '#/components/schemas/JwkSet' } } } } }
      }
    }
  }
}
