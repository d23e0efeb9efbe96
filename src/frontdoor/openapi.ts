import { FRONTED_ROUTES } from './routes.js'

type Json = Record<string, any>

const PREFIX = '/api/v1/orgs/{slug}/harness'
const slug = { name: 'slug', in: 'path', required: true, schema: { type: 'string' }, description: 'the org (ORGS_FILE)' }

/**
 * The front door's routes: each fronted harness operation (FRONTED_ROUTES,
 * the console's pages aside) under the org's prefix, as the harness
 * describes it (`harness`, its part of `/openapi.json`), with the org's
 * slug, a token of a member instead of the tenant header, and the answers
 * the front door adds.
 */
export function frontDoorOpenApi (harness: { paths: Record<string, object>, schemas: Record<string, object> }): { tag: { name: string, description: string }, errorSchema: object, schemas: Record<string, object>, paths: Record<string, object> } {
  const paths: Json = {}
  for (const route of FRONTED_ROUTES) {
    if (route.open) continue
    const method = route.method.toLowerCase()
    const op = (harness.paths[route.path] as Json | undefined)?.[method] as Json | undefined
    // Health is the harness's own, not in its part: the front door answers it the same way.
    const base: Json = op ?? { operationId: route.path === '/health' ? 'harnessHealth' : 'harnessReadiness', summary: `The harness's ${route.path}`, responses: { 200: { description: 'As the harness answers' } } }
    const id = String(base['operationId'])
    paths[`${PREFIX}${route.path}`] ??= { parameters: [slug] }
    paths[`${PREFIX}${route.path}`][method] = {
      ...base,
      operationId: `org${id[0]!.toUpperCase()}${id.slice(1)}`,
      security: [{ bearer: [] }],
      description: `${base['description'] ?? base['summary']}. Through the front door: a user's RS256 token (FRONTDOOR_JWKS_URL) or a service's HS256 token of a member of the org; the front door asserts the org's tenant to the harness.`,
      responses: {
        ...base['responses'],
        401: { description: 'No token, or one the front door does not accept' },
        403: { description: 'not_a_member: the token\'s subject is not a member of the org' },
        404: { description: 'No such org, route or run' },
        502: { description: 'The harness did not answer' }
      }
    }
  }
  return { tag: { name: 'frontdoor', description: 'The harness of an org, for its members (the front door)' }, errorSchema: { $ref: '#/components/schemas/HarnessError' }, schemas: harness.schemas, paths }
}
