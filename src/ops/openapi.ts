import type { Route } from '../http/index.js'

type Json = Record<string, any>

export interface OpenApiPart {
  /** The tag of every operation of the part, and its description. */
  tag: { name: string, description: string }
  /** Component schemas by name; the same objects the validators compile. */
  schemas: Record<string, object>
  paths: Record<string, object>
  /** The body of the part's error answers (its dialect, http/error-bodies.ts). */
  errorSchema: object
  /** Scopes of the tokens the part's operations require (`oauth2` security of the login's client credentials). */
  scopes?: Record<string, string>
}

export interface OpenApiServer {
  /** The URL clients reach this port at. */
  url: string
  description: string
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']
const header = (description: string, schema: object = { type: 'string' }): object => ({ description, schema })

/** The response headers the gateway sets: the request id on every answer, Retry-After on 429 and 503, Idempotent-Replay on evidence. */
const HEADERS = {
  'X-Request-Id': header('The request\'s id: the X-Request-Id sent (1 to 200 visible ASCII characters), else one the gateway made'),
  'Retry-After': header('Seconds to wait before trying again', { type: 'string', pattern: '^[0-9]+$' }),
  'Idempotent-Replay': header('`true` on the answer to an event_id already accepted: nothing was stored again', { type: 'string', enum: ['true'] })
}
const RETRY_STATUSES = new Set(['429', '503'])

/**
 * `/openapi.json` of one port: an OpenAPI 3.1 document assembled from the
 * parts the port serves, completed here the same way for every operation
 * (its tag, the request id header on every answer, Retry-After on 429 and
 * 503, the part's error body where an answer names none, the 431, 500 and
 * 503 of the HTTP edge), so
 * no part can forget one. `server` is read on the first request: the port
 * is known only once it listens. `login`, the login route's path when the
 * port serves it, is the token URL of the `oauth2` scheme.
 */
export function openApiRoute (parts: OpenApiPart[], server: () => OpenApiServer, login: string | undefined): Route {
  let body: Buffer | undefined
  return {
    method: 'GET',
    path: '/openapi.json',
    quiet: true,
    handler: () => {
      const where = server()
      body ??= Buffer.from(JSON.stringify(openApiDocument(parts, where, login === undefined ? undefined : `${where.url}${login}`)))
      return { status: 200, body, headers: { 'content-type': 'application/json' } }
    }
  }
}

export function openApiDocument (parts: OpenApiPart[], server: OpenApiServer, loginUrl: string | undefined): Json {
  const scopes = Object.assign({}, ...parts.map(p => p.scopes ?? {})) as Record<string, string>
  const securitySchemes: Json = {
    bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An RS256 token of the identity provider the harness trusts (IDP_ISSUER), without scopes' }
  }
  if (loginUrl !== undefined) {
    securitySchemes['oauth2'] = { type: 'oauth2', description: 'The gateway\'s own tokens: client credentials at the login route, with an `audience`', flows: { clientCredentials: { tokenUrl: loginUrl, scopes } } }
  }
  const paths: Json = {}
  for (const part of parts) {
    for (const [path, item] of Object.entries(part.paths as Record<string, Json>)) {
      paths[path] = completePath(path, item, part, loginUrl !== undefined)
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'evidence-gateway',
      version: '1.0.0',
      description: 'Login, asset track, event evidence and run harness: the routes of this port.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' }
    },
    servers: [server],
    tags: parts.map(p => p.tag),
    components: {
      securitySchemes,
      headers: Object.fromEntries(Object.entries(HEADERS).filter(([name]) => JSON.stringify(paths).includes(`"#/components/headers/${name}"`))),
      schemas: Object.assign({}, ...parts.map(p => p.schemas))
    },
    paths
  }
}

function completePath (path: string, item: Json, part: OpenApiPart, oauth: boolean): Json {
  const out: Json = { ...item }
  for (const method of METHODS) {
    const op = item[method] as Json | undefined
    if (op === undefined) continue
    if (typeof op['operationId'] !== 'string') throw new Error(`openapi: ${method.toUpperCase()} ${path} has no operationId`)
    out[method] = completeOperation(op, part, oauth)
  }
  return out
}

function completeOperation (op: Json, part: OpenApiPart, oauth: boolean): Json {
  const responses: Json = {}
  const all = { ...op['responses'] as Json }
  all['431'] ??= { description: 'header_fields_too_large: the request\'s headers are over the HTTP edge\'s limit' }
  all['500'] ??= { description: 'An unexpected failure; nothing is known to have been done' }
  all['503'] ??= { description: 'Draining for shutdown, or overloaded: try again after Retry-After' }
  for (const [status, response] of Object.entries(all as Record<string, Json>)) {
    const headers: Json = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' }, ...response['headers'] }
    if (RETRY_STATUSES.has(status)) headers['Retry-After'] ??= { $ref: '#/components/headers/Retry-After' }
    const errorBody = Number(status) >= 400 && response['content'] === undefined ? { content: { 'application/json': { schema: part.errorSchema } } } : {}
    responses[status] = { ...response, ...errorBody, headers }
  }
  const security = (op['security'] as Json[] | undefined)?.map(requirement => {
    // Scopes belong to the oauth2 scheme: an http bearer scheme takes none.
    const scoped = requirement['bearer'] as string[] | undefined
    return oauth && scoped !== undefined && scoped.length > 0 ? { oauth2: scoped } : requirement
  })
  return { ...op, tags: [part.tag.name], ...(security === undefined ? {} : { security }), responses }
}
