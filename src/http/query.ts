import { GatewayError } from '../errors.js'

/**
 * The one query policy, every route's: a parameter given twice is refused
 * (400 `validation_error` naming it), as a JSON key given twice is. Readers
 * disagree on which copy wins (URLSearchParams.get the first, many
 * frameworks the last, some join them), so a proxy, a log or a cache in
 * front could act on another value than the route does. Names are compared
 * decoded: `a=1&%61=2` gives `a` twice. A query without a repeat is
 * returned parsed, for the route to read.
 */
export function parseQuery (query: string): URLSearchParams {
  const params = new URLSearchParams(query)
  if (query === '') return params
  const seen = new Set<string>()
  for (const name of params.keys()) {
    if (seen.has(name)) {
      throw new GatewayError('validation_error', `${name} is given more than once`, { details: { [name]: 'is given more than once' } })
    }
    seen.add(name)
  }
  return params
}
