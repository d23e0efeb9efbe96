import { isFrontedPath } from './routes.js'

/**
 * A harness answer whose top-level `links` are re-rooted under the front
 * door: `/runs/{id}` becomes `{prefix}/runs/{id}`, so a client that came
 * through `/api/v1/orgs/{slug}/harness` follows its links back the same way.
 * Only a link that names a fronted route is touched (anything else could not
 * be followed through the front door anyway); an answer that is not a JSON
 * object with links is passed on byte for byte.
 */
export function rerootLinks (body: Buffer, prefix: string): Buffer {
  let answer: unknown
  try {
    answer = JSON.parse(body.toString('utf8'))
  } catch {
    return body
  }
  const rerooted = rerootAnswer(answer, prefix)
  return rerooted === answer ? body : Buffer.from(JSON.stringify(rerooted))
}

/**
 * The same for an answer served in-process: a JSON value (a copy with the
 * links re-rooted, or the value itself when none is), or its bytes.
 */
export function rerootAnswer (answer: unknown, prefix: string): unknown {
  if (Buffer.isBuffer(answer)) return rerootLinks(answer, prefix)
  const links = typeof answer === 'object' && answer !== null ? (answer as { links?: unknown }).links : undefined
  if (typeof links !== 'object' || links === null) return answer
  const rerooted: Record<string, unknown> = { ...links }
  let changed = false
  for (const [name, link] of Object.entries(links)) {
    if (typeof link !== 'string') continue
    const path = link.split('?')[0]!
    if (!isFrontedPath(path)) continue
    rerooted[name] = `${prefix}${link}`
    changed = true
  }
  return changed ? { ...(answer as object), links: rerooted } : answer
}
