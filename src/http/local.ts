import { payloadTooLarge } from './body.js'
import { LATER, type ForwardedView, type Reply, type RequestContext } from './context.js'
import type { LocalRoute } from './server.js'

const NO_BODY = Buffer.alloc(0)

/**
 * Serves a request that one route of the process admitted (the front
 * door's, after its own checks) with a route of another server of the
 * process (the harness's), as that server would have served the request
 * `view` describes: the route's own `authorize` and `handler` run against
 * it, its body limit holds, and its answer (a reply, an error, a stream)
 * goes to the caller's own response. What the other server does before a
 * route (its Host and Origin guard, its access log and metrics, its body
 * memory) is not repeated: the admitting route's server did its part of it.
 * A handler that answers LATER is awaited, so the result is a reply or a
 * promise of one.
 */
export function serveLocal (ctx: RequestContext, local: LocalRoute, view: Omit<ForwardedView, 'params'>): Reply | undefined | Promise<Reply | undefined> {
  ctx.forwardAs({ ...view, params: local.params })
  const route = local.route
  if (route.body === 'json') {
    ctx.rawBody ??= NO_BODY
    if (ctx.rawBody.length > local.limit) throw payloadTooLarge(local.limit)
  }
  const authorize = route.authorize
  if (authorize === undefined) return settled(ctx, route.handler(ctx, undefined))
  const auth = authorize(ctx)
  return auth instanceof Promise ? auth.then(a => settled(ctx, route.handler(ctx, a))) : settled(ctx, route.handler(ctx, auth))
}

function settled<R> (ctx: RequestContext, result: R | typeof LATER): R | Promise<Reply | undefined> {
  if (result !== LATER) return result
  return new Promise((resolve, reject) => ctx.answerLater((_, reply, err) => { if (err === undefined) resolve(reply); else reject(err) }))
}
